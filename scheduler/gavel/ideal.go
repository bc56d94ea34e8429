package gavel

import (
	"context"
	"fmt"
	"math"
)

// runIdeal is the mechanism-free run ("ideal" in Gavel's Fig. 13): between
// two events (an arrival or a completion) every active job progresses at
// exactly the rate its allocation gives it, Σ_t X[t]·throughput[t], and the
// allocation is recomputed at every event. Comparing it with the rounds
// measures what the round mechanism loses. (Gavel's own ideal branch
// cannot run on a trace: it needs a next arrival and indexes worker
// assignments that it never makes; this is its intent, done exactly.)
func (s *simulator) runIdeal(ctx context.Context, tp *Throughputs, w Workload) error {
	queue := w.Trace
	g := w.Generator
	next := func() (float64, bool) {
		if queue != nil {
			if len(queue) == 0 {
				return 0, false
			}
			return queue[0].ArrivalS, true
		}
		if g.NumJobs() > 0 && g.Generated() >= g.NumJobs() {
			return 0, false
		}
		return g.NextArrival(), true
	}
	busy := make([]float64, len(s.types))
	for iter := 0; ; iter++ {
		if iter%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for {
			at, ok := next()
			if !ok || at > s.now {
				break
			}
			var j Job
			if queue != nil {
				j, queue = queue[0], queue[1:]
			} else {
				j = g.Next()
			}
			if err := s.addJob(j, tp, j.ArrivalS); err != nil {
				return err
			}
		}
		if s.cfg.Window != nil && s.window.Complete(false) {
			break
		}
		if s.cfg.MaxS > 0 && s.now > s.cfg.MaxS {
			s.res.Truncated = true
			break
		}
		at, more := next()
		if len(s.active) == 0 {
			if !more {
				break
			}
			s.now = at
			continue
		}
		if err := s.idealStep(at, more, busy); err != nil {
			return err
		}
	}
	// Utilisation: busy GPU-time over GPU-time, spread evenly over each
	// type's GPUs (no worker identities in a fluid run).
	s.cumBusy = nil
	for t, b := range busy {
		for k := 0; k < s.workers[t]; k++ {
			s.cumBusy = append(s.cumBusy, b/float64(s.workers[t]))
		}
	}
	return nil
}

// idealStep allocates, runs every job at its allocated rate until the
// next arrival or the first completion, and completes the jobs done.
func (s *simulator) idealStep(at float64, more bool, busy []float64) error {
	if s.packing != nil {
		return fmt.Errorf("ideal mode does not run packing policies (%s)", s.policy.Name())
	}
	a, err := s.policy.Allocate(s.state())
	if err != nil {
		return fmt.Errorf("t=%.1f s: allocation: %w", s.now, err)
	}
	ka := map[ckey][]float64{}
	for id, row := range a {
		ka[single(id)] = row
	}
	if err := s.checkAllocation(ka); err != nil {
		return err
	}
	s.allocs++
	rates := make(map[int]float64, len(s.active))
	dt := math.Inf(1)
	if more {
		dt = at - s.now
	}
	for _, id := range s.active {
		js := s.jobs[id]
		r := 0.0
		for t, x := range a[id] {
			r += x * js.tput[t]
		}
		rates[id] = r
		if r > 0 {
			dt = math.Min(dt, (js.job.TotalSteps-js.stepsRun)/r)
		}
	}
	if math.IsInf(dt, 1) {
		return fmt.Errorf("t=%.1f s: stalled: %d active jobs get no throughput and no job arrives", s.now, len(s.active))
	}
	s.now += dt
	s.res.Rounds++
	for _, id := range append([]int(nil), s.active...) {
		js := s.jobs[id]
		for t, x := range a[id] {
			busy[t] += x * float64(js.job.ScaleFactor) * dt
		}
		js.stepsRun += rates[id] * dt
		if js.job.TotalSteps-js.stepsRun <= 1e-9*js.job.TotalSteps {
			js.latest = s.now
			s.removeJob(id, false)
		}
	}
	return nil
}
