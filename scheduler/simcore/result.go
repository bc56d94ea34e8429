package simcore

import (
	"math"
	"sort"
)

// Engine names say whose rules a Result's figures follow.
const (
	EngineSynergy = "synergy" // scheduler/sim: fixed rounds, jobs finish on round boundaries
	EngineGavel   = "gavel"   // scheduler/gavel: Gavel's rounds and micro-tasks
)

// Result is one simulation's outcome, whichever engine ran it. The common
// figures (JCTs, makespan, utilisation, counts) are over the window's jobs;
// each engine fills its own extras and leaves the other's empty (they are
// left out of the JSON).
type Result struct {
	// Engine is EngineSynergy or EngineGavel.
	Engine   string  `json:"engine"`
	Cluster  string  `json:"cluster"`
	GPUs     int     `json:"gpus"`
	Strategy string  `json:"strategy,omitempty"` // Synergy's allocation strategy (Gavel's rows with one: scheduler/joint)
	Policy   string  `json:"policy"`
	Workload string  `json:"workload,omitempty"`
	Seed     uint64  `json:"seed"`
	RoundS   float64 `json:"round_s"`
	// Window is the jobs the figures are over (nil: every job).
	Window *Window `json:"window,omitempty"`
	Rounds int     `json:"rounds"`
	// EndS is the simulated clock at the end (the end of the last round).
	EndS float64 `json:"end_s"`
	// Truncated says the run was ended by a time limit before its jobs
	// finished (the figures are then over the jobs that did).
	Truncated bool `json:"truncated,omitempty"`
	// NumJobs counts the jobs that arrived; NumFinished the window's jobs
	// that finished.
	NumJobs     int `json:"num_jobs"`
	NumFinished int `json:"num_finished"`
	// JCT is over the window's finished jobs (hours); MeanJCTS is its mean
	// in seconds, Gavel's headline figure, kept exact.
	JCT      Summary `json:"jct"`
	MeanJCTS float64 `json:"mean_jct_s"`
	// AllJobs is the JCT over every finished job, window or not.
	AllJobs Summary `json:"all_jobs_jct"`
	// MakespanS is from the window's first arrival to its last finish.
	MakespanS float64 `json:"makespan_s"`
	// Utilization is the GPUs' use, 0–1, by the engine's own definition:
	// Synergy's allocated GPU share averaged over the window's span,
	// Gavel's mean over GPUs of busy time over the simulated time.
	Utilization float64 `json:"utilization"`
	// Jobs is the per-job record: Synergy's window's finished jobs, by id;
	// Gavel's every job, in arrival order (ids from 0).
	Jobs []JobRecord `json:"jobs"`

	// Synergy's extras.

	// QueueingDelay is first start − arrival over the window's finished jobs.
	QueueingDelay *Summary `json:"queueing_delay,omitempty"`
	// Shares is the allocated GPU, CPU and memory over the window's span;
	// SharesHourly the same per hour of simulated time.
	Shares       *UtilPoint  `json:"shares,omitempty"`
	SharesHourly []UtilPoint `json:"shares_hourly,omitempty"`

	// Gavel's extras.

	// Allocations is how often the policy was asked for an allocation.
	Allocations int `json:"allocations,omitempty"`
	// MeanJCTLowS and MeanJCTHighS split MeanJCTS by priority weight (1,
	// and above 1).
	MeanJCTLowS  *float64 `json:"mean_jct_low_priority_s,omitempty"`
	MeanJCTHighS *float64 `json:"mean_jct_high_priority_s,omitempty"`
	// LeaseExtensions is [extended, opportunities], as Gavel counts them.
	LeaseExtensions *[2]int `json:"lease_extensions,omitempty"`
	// SLOJobs counts the window's jobs with an SLO; SLOViolations those
	// of them that missed it: finished after their deadline (arrival + SLO
	// × duration), or never finished (dropped after failed micro-tasks, or
	// still running at the end when that is past the deadline).
	SLOJobs       int `json:"slo_jobs,omitempty"`
	SLOViolations int `json:"slo_violations,omitempty"`
	// SLOViolationsGavel is Gavel's own count (get_num_SLO_violations):
	// every job with an SLO that finished, window or not, whose JCT exceeds
	// its deadline — Gavel compares the JCT, a duration, with the deadline,
	// a timestamp (arrival + SLO × duration), so a job arriving at time a
	// counts only when it finished more than a + SLO × duration after its
	// arrival: at a = 0 the two counts agree, later they drift apart.
	SLOViolationsGavel int `json:"slo_violations_gavel,omitempty"`
	// TotalCost is the cost of every job's micro-tasks, window or not
	// (Gavel's get_total_cost), with a price file.
	TotalCost *float64 `json:"total_cost,omitempty"`
}

// JobRecord is one job of a result.
type JobRecord struct {
	ID int `json:"id"`
	// Model is Synergy's zoo model; JobType Gavel's job type.
	Model   string `json:"model,omitempty"`
	JobType string `json:"job_type,omitempty"`
	// GPUs is the job's GPU count (Gavel's scale factor).
	GPUs int `json:"gpus"`
	// Priority is Gavel's priority weight.
	Priority float64 `json:"priority_weight,omitempty"`
	ArrivalS float64 `json:"arrival_s"`
	// StartS is the job's first start (Synergy's; Gavel's engine does not
	// record it).
	StartS *float64 `json:"start_s,omitempty"`
	// FinishS and JCTS are null for a job that did not finish.
	FinishS *float64 `json:"finish_s"`
	JCTS    *float64 `json:"jct_s"`
	// Failed is set for a job Gavel's rules drop after 5 failed
	// micro-tasks (JCT null, left out of the means, as in Gavel).
	Failed bool `json:"failed,omitempty"`
	// Cost is what the job's micro-tasks cost at the price file's prices
	// (absent without one).
	Cost      *float64 `json:"cost,omitempty"`
	DeadlineS *float64 `json:"deadline_s,omitempty"`
}

// Finished is a finished job's record: arrival, first start (negative: not
// recorded) and finish, in seconds.
func Finished(id int, arrivalS, startS, finishS float64) JobRecord {
	f, jct := finishS, finishS-arrivalS
	r := JobRecord{ID: id, ArrivalS: arrivalS, FinishS: &f, JCTS: &jct}
	if startS >= 0 {
		s := startS
		r.StartS = &s
	}
	return r
}

// Tally fills r's common figures from jobs, the records the engine
// reports on (Gavel's every job, finished or not; Synergy's finished
// ones), over r.Window: NumFinished, JCT and MeanJCTS (the mean in the
// records' order) over the window's finished jobs, AllJobs over every
// finished job, and MakespanS from the window's first arrival to its last
// finish (0 when none of its jobs finished). It returns the window's
// finished JCTs in the records' order and that first arrival and last
// finish (±Inf when none).
func (r *Result) Tally(jobs []JobRecord) (jct []float64, first, last float64) {
	var every []float64
	first, last = math.Inf(1), math.Inf(-1)
	for _, j := range jobs {
		if j.JCTS != nil {
			every = append(every, *j.JCTS)
		}
		if r.Window != nil && !r.Window.Has(j.ID) {
			continue
		}
		first = math.Min(first, j.ArrivalS)
		if j.JCTS == nil {
			continue
		}
		jct = append(jct, *j.JCTS)
		last = math.Max(last, *j.FinishS)
	}
	r.NumFinished = len(jct)
	r.JCT, r.MeanJCTS, r.AllJobs = Summarise(jct), Mean(jct), Summarise(every)
	r.MakespanS = 0
	if len(jct) > 0 {
		r.MakespanS = last - first
	}
	return jct, first, last
}

// Summary is a distribution in hours.
type Summary struct {
	N           int     `json:"n"`
	MeanHours   float64 `json:"mean_hours"`
	MedianHours float64 `json:"median_hours"`
	P95Hours    float64 `json:"p95_hours"`
	P99Hours    float64 `json:"p99_hours"`
	P999Hours   float64 `json:"p999_hours"`
	MaxHours    float64 `json:"max_hours"`
}

// UtilPoint is the share of the cluster allocated over [StartS, EndS), in
// percent.
type UtilPoint struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	GPUPct float64 `json:"gpu_pct"`
	CPUPct float64 `json:"cpu_pct"`
	MemPct float64 `json:"mem_pct"`
}

// quantile is the q-quantile of sorted xs with linear interpolation between
// closest ranks (numpy's and pandas' default, which Synergy's figures use).
func quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if hi >= n {
		hi = n - 1
	}
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// Summarise describes xs (seconds) in hours.
func Summarise(xsSeconds []float64) Summary {
	if len(xsSeconds) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xsSeconds...)
	sort.Float64s(s)
	h := func(x float64) float64 { return x / 3600 }
	return Summary{
		N:           len(s),
		MeanHours:   h(Mean(s)), // summed in sorted order, as Synergy's figures always were
		MedianHours: h(quantile(s, 0.5)),
		P95Hours:    h(quantile(s, 0.95)),
		P99Hours:    h(quantile(s, 0.99)),
		P999Hours:   h(quantile(s, 0.999)),
		MaxHours:    h(s[len(s)-1]),
	}
}

// Mean is the mean of xs in their order (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Point is one run of a sweep: a policy (with Synergy's allocation
// strategy, when one is given) at a load and seed.
type Point struct {
	// Strategy is Synergy's allocation strategy (on a typed cluster: the
	// CPU and memory placement it runs under Policy); empty for Gavel's
	// policies.
	Strategy string `json:"strategy,omitempty"`
	Policy   string `json:"policy"`
	// JobsPerHour is the generator's load (0 for a trace or a static
	// workload).
	JobsPerHour float64 `json:"jobs_per_hour,omitempty"`
	Seed        uint64  `json:"seed"`
}

// Run is one point of a sweep and its result.
type Run struct {
	Point  Point   `json:"point"`
	Result *Result `json:"result"`
}
