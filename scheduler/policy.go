package scheduler

import (
	"cmp"
	"slices"
)

// Active is a job's state while it is in the system: what a Policy orders
// by.
type Active struct {
	Job *Job
	// Executed is the number of iterations credited so far.
	Executed int64
	// AttainedSeconds is wall-clock seconds of rounds the job ran
	// (Synergy's attained_service_time; LAS multiplies it by GPUs).
	AttainedSeconds float64
	// Priority is raised to 1 when the job has not run for 1000 hours;
	// every policy but FIFO orders by it first.
	Priority int
	// Speedup is the speed-up of the job's last allocation (1 when it was
	// demoted to fair share), or its ideal speed-up when it has not run
	// since. SRTF and FTF read it when rates are not fair-share.
	Speedup float64
	// IdealSpeedup is the speed-up at the job's ideal demand on the
	// cluster (NewActive's speedup), what Speedup returns to while the
	// job waits.
	IdealSpeedup float64
	// LastRunEndSeconds is when the job's last lease ended; -1 if never.
	LastRunEndSeconds float64
	// FirstStartSeconds is when the job was first placed; -1 if never.
	FirstStartSeconds float64
	// FinishSeconds is when the job finished; -1 while it runs.
	FinishSeconds float64

	key [3]float64 // scratch for sorting
}

// NewActive starts tracking a job whose ideal speed-up on the cluster is
// speedup.
func NewActive(j *Job, speedup float64) *Active {
	return &Active{Job: j, Speedup: speedup, IdealSpeedup: speedup, LastRunEndSeconds: -1, FirstStartSeconds: -1, FinishSeconds: -1}
}

// Remaining is the number of iterations left.
func (a *Active) Remaining() int64 { return a.Job.Iterations - a.Executed }

// RemainingSeconds is Synergy's remaining_duration: remaining iterations at
// fair-share speed, divided by the last speed-up unless fairRates.
func (a *Active) RemainingSeconds(fairRates bool) float64 {
	rem := float64(a.Remaining())
	if fairRates {
		return a.Job.IterSeconds * rem
	}
	return a.Job.IterSeconds * rem / a.Speedup
}

// FinishTimeFairness is the Themis-style ratio Synergy's FTF computes: time
// in the system plus the estimated remaining time, over the job's whole
// duration at fair share (jobs.py finish_time_fair_metric). Above 1 the job
// is doing worse than on its fair share alone.
func (a *Active) FinishTimeFairness(now float64, fairRates bool) float64 {
	return (now - a.Job.ArrivalSeconds + a.RemainingSeconds(fairRates)) / (a.Job.IterSeconds * float64(a.Job.Iterations))
}

// OrderContext is what a policy may look at besides the jobs.
type OrderContext struct {
	NowSeconds float64
	// FreeGPUs is the number of GPUs free at the start of the round.
	FreeGPUs int
	// FairRates is the strategy's FairRates.
	FairRates bool
	// LargestFirst is set for strategies implementing LargestFirst.
	LargestFirst bool
	// InArrivalOrder says the queue is in arrival order already, ties as
	// they stand: a policy ordering by arrival (ArrivalOrder) then returns
	// it without reading it.
	InArrivalOrder bool
}

// ArrivalOrder is implemented by a policy that offers the whole queue in
// arrival order, ties in the order given (FIFO): its Order leaves a queue
// in that order as it is, so a caller that keeps track of that can say so
// (OrderContext.InArrivalOrder) and spare it the reading.
type ArrivalOrder interface {
	OrdersByArrival() bool
}

// NewOrderContext is the context in which jobs are ordered for strategy s
// at nowSeconds with freeGPUs free: the strategy's FairRates and
// LargestFirst.
func NewOrderContext(s Strategy, nowSeconds float64, freeGPUs int) OrderContext {
	ctx := OrderContext{NowSeconds: nowSeconds, FreeGPUs: freeGPUs, FairRates: s.FairRates()}
	if lf, ok := s.(LargestFirst); ok {
		ctx.LargestFirst = lf.LargestFirst()
	}
	return ctx
}

// Policy orders the runnable jobs each round.
type Policy interface {
	Name() string
	// Order sorts queue in place, stably (ties keep their previous order,
	// as the original's list.sort does; the queue persists between rounds)
	// and returns the jobs to offer this round, in order.
	Order(queue []*Active, ctx OrderContext) []*Active
}

// sortByKey stably sorts queue by the key fields already filled in.
func sortByKey(queue []*Active) {
	less := func(a, b *Active) int {
		for k := range a.key {
			if a.key[k] < b.key[k] {
				return -1
			}
			if a.key[k] > b.key[k] {
				return 1
			}
		}
		return 0
	}
	if slices.IsSortedFunc(queue, less) {
		return
	}
	slices.SortStableFunc(queue, less)
}

// FIFO offers jobs in arrival order.
type FIFO struct{}

func (FIFO) Name() string { return "fifo" }

// OrdersByArrival implements ArrivalOrder.
func (FIFO) OrdersByArrival() bool { return true }

// Order implements Policy. The queue persists between rounds and new jobs
// join it at the end, so it is usually in arrival order already: then
// reading the arrivals is all it costs, or nothing when the caller says so.
func (FIFO) Order(queue []*Active, ctx OrderContext) []*Active {
	if ctx.InArrivalOrder || slices.IsSortedFunc(queue, func(a, b *Active) int { return cmp.Compare(a.Job.ArrivalSeconds, b.Job.ArrivalSeconds) }) {
		return queue
	}
	for _, a := range queue {
		a.key = [3]float64{a.Job.ArrivalSeconds}
	}
	sortByKey(queue)
	return queue
}

// SRTF offers jobs shortest remaining time first: key (−priority,
// remaining seconds, arrival).
type SRTF struct{}

func (SRTF) Name() string { return "srtf" }

// Order implements Policy.
func (SRTF) Order(queue []*Active, ctx OrderContext) []*Active {
	for _, a := range queue {
		a.key = [3]float64{-float64(a.Priority), a.RemainingSeconds(ctx.FairRates), a.Job.ArrivalSeconds}
	}
	sortByKey(queue)
	return queue
}

// LAS offers jobs least attained service first: key (−priority, attained
// seconds × GPUs, arrival). As in the original, it offers only the prefix of
// jobs that fit the free GPUs by count (skipping any that do not), and before
// a LargestFirst strategy (TUNE) it re-sorts those by GPU demand,
// descending.
type LAS struct{}

func (LAS) Name() string { return "las" }

// Order implements Policy.
func (LAS) Order(queue []*Active, ctx OrderContext) []*Active {
	for _, a := range queue {
		a.key = [3]float64{-float64(a.Priority), a.AttainedSeconds * float64(a.Job.GPUs), a.Job.ArrivalSeconds}
	}
	sortByKey(queue)
	var offer []*Active
	free := ctx.FreeGPUs
	for _, a := range queue {
		if a.Job.GPUs <= free {
			offer = append(offer, a)
			free -= a.Job.GPUs
		}
	}
	if ctx.LargestFirst {
		slices.SortStableFunc(offer, func(a, b *Active) int { return b.Job.GPUs - a.Job.GPUs })
	}
	return offer
}

// FTF is finish-time fairness (Themis): the job with the largest ratio of
// shared-cluster to ideal completion time goes first; key (−priority,
// −ratio, arrival). Synergy's FTF sorts the ratio ascending — the jobs
// treated best first — which is a defect; Ascending reproduces it for
// comparisons with the original (policy name "ftf-synergy").
type FTF struct {
	Ascending bool
}

func (f FTF) Name() string {
	if f.Ascending {
		return "ftf-synergy"
	}
	return "ftf"
}

// Order implements Policy.
func (f FTF) Order(queue []*Active, ctx OrderContext) []*Active {
	for _, a := range queue {
		rho := a.FinishTimeFairness(ctx.NowSeconds, ctx.FairRates)
		if !f.Ascending {
			rho = -rho
		}
		a.key = [3]float64{-float64(a.Priority), rho, a.Job.ArrivalSeconds}
	}
	sortByKey(queue)
	return queue
}
