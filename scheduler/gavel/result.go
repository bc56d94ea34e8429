package gavel

import (
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// summarise is the run's simcore.Result by Gavel's rules: mean JCT (and
// per priority) over the window's finished jobs, makespan, utilisation as
// Gavel's (busy time over the simulated time, averaged over GPUs), lease
// extensions, SLO counts and cost.
func (s *simulator) summarise() *simcore.Result {
	r := s.res
	r.Engine, r.Policy, r.Cluster, r.Seed, r.RoundS, r.Window = simcore.EngineGavel, s.policy.Name(), s.cfg.Cluster.String(), s.cfg.Seed, s.cfg.RoundS, s.cfg.Window
	r.GPUs = len(s.wtype)
	r.Allocations, r.EndS, r.LeaseExtensions = s.allocs, s.clock.Now(), &[2]int{s.leaseExt, s.leaseOpp}
	r.NumJobs = len(r.Jobs)
	r.Tally(r.Jobs)
	var low, high []float64
	for _, j := range r.Jobs {
		if j.JCTS == nil || !inWindow(r.Window, j.ID) {
			continue
		}
		if j.Priority == 1 {
			low = append(low, *j.JCTS)
		} else {
			high = append(high, *j.JCTS)
		}
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
	if len(low) > 0 {
		m := simcore.Mean(low)
		r.MeanJCTLowS = &m
	}
	if len(high) > 0 {
		m := simcore.Mean(high)
		r.MeanJCTHighS = &m
	}
	if s.clock.Now() > 0 {
		u := 0.0
		for _, b := range s.cumBusy {
			u += b / s.clock.Now()
		}
		r.Utilization = u / float64(len(s.cumBusy))
	}
	return r
}

// countSLOs fills the SLO counts (see Result).
func (s *simulator) countSLOs(r *simcore.Result) {
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
		case j.Failed || s.clock.Now() > d:
			r.SLOViolations++
		}
	}
}
