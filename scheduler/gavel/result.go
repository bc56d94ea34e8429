package gavel

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Result is one simulation's outcome, with Gavel's metrics.
type Result struct {
	Policy  string          `json:"policy"`
	Cluster string          `json:"cluster"`
	Seed    uint64          `json:"seed"`
	RoundS  float64         `json:"round_s"`
	Window  *simcore.Window `json:"window,omitempty"`
	// Rounds is the number of scheduling rounds; Allocations how often
	// the policy was asked for an allocation.
	Rounds      int `json:"rounds"`
	Allocations int `json:"allocations"`
	NumJobs     int `json:"num_jobs"`
	NumFinished int `json:"num_finished"`
	// MeanJCTS is Gavel's average JCT over the window's finished jobs
	// (all jobs without a window), also split by priority weight.
	MeanJCTS     float64  `json:"mean_jct_s"`
	MeanJCTLowS  *float64 `json:"mean_jct_low_priority_s,omitempty"`
	MeanJCTHighS *float64 `json:"mean_jct_high_priority_s,omitempty"`
	// MakespanS is the window's last finish minus its first arrival; EndS
	// the simulated clock at the end (the end of the last round).
	MakespanS float64 `json:"makespan_s"`
	EndS      float64 `json:"end_s"`
	// Utilization is Gavel's: the mean over GPUs of busy time over the
	// simulated time.
	Utilization float64 `json:"utilization"`
	// LeaseExtensions is [extended, opportunities], as Gavel counts them.
	LeaseExtensions [2]int `json:"lease_extensions"`
	// Truncated says the run hit Config.MaxS before its jobs finished
	// (the means are then over the jobs that did).
	Truncated bool `json:"truncated,omitempty"`
	// SLOJobs counts the window's jobs with an SLO; SLOViolations those
	// of them that missed it: finished after their deadline (arrival + SLO
	// × duration), or never finished (dropped after failed micro-tasks, or
	// still running at the end when that is past the deadline).
	SLOJobs       int `json:"slo_jobs"`
	SLOViolations int `json:"slo_violations"`
	// SLOViolationsGavel is Gavel's own count (get_num_SLO_violations):
	// every job with an SLO that finished, window or not, whose JCT exceeds
	// its deadline — Gavel compares the JCT, a duration, with the deadline,
	// a timestamp (arrival + SLO × duration), so a job arriving at time a
	// counts only when it finished more than a + SLO × duration after its
	// arrival: at a = 0 the two counts agree, later they drift apart.
	SLOViolationsGavel int `json:"slo_violations_gavel"`
	// TotalCost is the cost of every job's micro-tasks, window or not
	// (Gavel's get_total_cost), with a price file.
	TotalCost *float64    `json:"total_cost,omitempty"`
	Jobs      []JobResult `json:"jobs"`
}

// JobResult is one job. Ids are numbered from 0 in arrival (trace) order,
// as Gavel numbers them.
type JobResult struct {
	ID          int      `json:"id"`
	JobType     string   `json:"job_type"`
	ScaleFactor int      `json:"scale_factor"`
	Priority    float64  `json:"priority_weight"`
	ArrivalS    float64  `json:"arrival_s"`
	FinishS     *float64 `json:"finish_s"`
	JCTS        *float64 `json:"jct_s"`
	// Failed is set for a job Gavel's rules drop after 5 failed
	// micro-tasks (JCT null, left out of the means, as in Gavel).
	Failed bool `json:"failed,omitempty"`
	// Cost is what the job's micro-tasks cost at the price file's prices
	// (absent without one).
	Cost      *float64 `json:"cost,omitempty"`
	DeadlineS *float64 `json:"deadline_s,omitempty"`
}

func (s *simulator) summarise() *Result {
	r := s.res
	r.Policy, r.Cluster, r.Seed, r.RoundS, r.Window = s.policy.Name(), s.cfg.Cluster.String(), s.cfg.Seed, s.cfg.RoundS, s.cfg.Window
	r.Allocations, r.EndS, r.LeaseExtensions = s.allocs, s.now, [2]int{s.leaseExt, s.leaseOpp}
	r.NumJobs = len(r.Jobs)
	var all, low, high []float64
	first, last := math.Inf(1), math.Inf(-1)
	for _, j := range r.Jobs {
		if !inWindow(r.Window, j.ID) {
			continue
		}
		first = math.Min(first, j.ArrivalS)
		if j.JCTS == nil {
			continue
		}
		r.NumFinished++
		all = append(all, *j.JCTS)
		if j.Priority == 1 {
			low = append(low, *j.JCTS)
		} else {
			high = append(high, *j.JCTS)
		}
		last = math.Max(last, *j.FinishS)
	}
	s.countSLOs(r)
	if s.cfg.Prices != nil {
		total := 0.0
		for _, j := range r.Jobs {
			if j.Cost != nil {
				total += *j.Cost
			}
		}
		r.TotalCost = &total
	}
	r.MeanJCTS = mean(all)
	if len(low) > 0 {
		m := mean(low)
		r.MeanJCTLowS = &m
	}
	if len(high) > 0 {
		m := mean(high)
		r.MeanJCTHighS = &m
	}
	if len(all) > 0 {
		r.MakespanS = last - first
	}
	if s.now > 0 {
		u := 0.0
		for _, b := range s.cumBusy {
			u += b / s.now
		}
		r.Utilization = u / float64(len(s.cumBusy))
	}
	return r
}

// countSLOs fills the SLO counts (see Result).
func (s *simulator) countSLOs(r *Result) {
	for _, j := range r.Jobs {
		if j.DeadlineS == nil {
			continue
		}
		d := *j.DeadlineS
		if j.JCTS != nil && *j.JCTS > d {
			r.SLOViolationsGavel++
		}
		if !inWindow(r.Window, j.ID) {
			continue
		}
		r.SLOJobs++
		switch {
		case j.FinishS != nil:
			if *j.FinishS > d {
				r.SLOViolations++
			}
		case j.Failed || s.now > d:
			r.SLOViolations++
		}
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// WriteJSON writes the result, indented.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
