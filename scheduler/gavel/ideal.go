package gavel

import (
	"context"
	"fmt"
	"math"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// runIdeal is the mechanism-free run ("ideal" in Gavel's Fig. 13): between
// two events (an arrival or a completion) every active job progresses at
// exactly the rate its allocation gives it, Σ_t X[t]·throughput[t], and the
// allocation is recomputed at every event. Comparing it with the rounds
// measures what the round mechanism loses. (Gavel's own ideal branch
// cannot run on a trace: it needs a next arrival and indexes worker
// assignments that it never makes; this is its intent, done exactly.)
func (s *simulator) runIdeal(ctx context.Context, tp *Throughputs, w Workload) error {
	arr, err := w.arrivals()
	if err != nil {
		return err
	}
	r := &idealEvents{ctx: ctx, s: s, tp: tp, arr: arr, busy: make([]float64, len(s.types))}
	if err := r.admit(ctx); err != nil {
		return err
	}
	// The shared loop runs the events; rounds counts the allocations
	// applied (idealStep), not the clock's jumps to an arrival.
	out, err := simcore.Loop(ctx, r, simcore.Limits{MaxS: s.cfg.MaxS, CheckEvery: 64})
	s.res.Truncated = out.Truncated
	if err != nil {
		return err
	}
	// Utilisation: busy GPU-time over GPU-time, spread evenly over each
	// type's GPUs (no worker identities in a fluid run).
	s.cumBusy = nil
	for t, b := range r.busy {
		for k := 0; k < s.workers[t]; k++ {
			s.cumBusy = append(s.cumBusy, b/float64(s.workers[t]))
		}
	}
	return nil
}

// idealEvents is ideal mode's part of the shared loop (simcore.Rounds): a
// "round" is one event, the allocation applied exactly until the next
// arrival or the first completion, followed by the arrivals due then (so
// that Over sees them, as the fluid loop always has); Advance and Admit have
// nothing left to do.
type idealEvents struct {
	ctx  context.Context // the run's, for the arrivals Round admits
	s    *simulator
	tp   *Throughputs
	arr  *simcore.Arrivals[Job] // the jobs still to arrive
	busy []float64              // GPU-seconds allocated per type
}

var _ simcore.Rounds = (*idealEvents)(nil)

// Over says whether the window's jobs are done.
func (r *idealEvents) Over() bool { return r.s.cfg.Window != nil && r.s.window.Complete(false) }

// Now is the simulated clock.
func (r *idealEvents) Now() float64 { return r.s.now }

// Advance and Admit do nothing: Round applies the event and admits the
// arrivals due after it.
func (r *idealEvents) Advance() error              { return nil }
func (r *idealEvents) Admit(context.Context) error { return nil }

// Round jumps to the next arrival when no job is active (the run ends when
// none is to come), else applies the allocation until the next event; then
// admits the arrivals due.
func (r *idealEvents) Round() (simcore.Step, error) {
	s := r.s
	next, more := r.arr.Next()
	at := next.ArrivalS
	step := simcore.Ran
	switch {
	case len(s.active) == 0 && !more:
		return simcore.End, nil
	case len(s.active) == 0:
		s.now, step = at, simcore.Idle
	default:
		if err := s.idealStep(at, more, r.busy); err != nil {
			return simcore.End, err
		}
	}
	return step, r.admit(r.ctx)
}

// admit adds the jobs arriving by now.
func (r *idealEvents) admit(ctx context.Context) error {
	return r.arr.Due(ctx, r.s.now, func(j Job) error { return r.s.addJob(j, r.tp, j.ArrivalS) })
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
	if err := s.checkAllocation(allocation{single: a}); err != nil {
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
