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
	// The shared loop runs the events; rounds counts the allocations
	// applied (idealStep), not the clock's jumps to an arrival.
	out, err := simcore.Loop(ctx, r, simcore.Limits{MaxS: s.cfg.MaxS, CheckEvery: 64, Progress: s.loopProgress()})
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
// that the run's end, by its window or by --gavel-max-hours, sees them, as
// the fluid loop always has); the loop then moves the clock to the event.
// Advance has nothing to do; Admit brings the first arrivals in.
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

// Clock is the run's clock.
func (r *idealEvents) Clock() *simcore.Clock { return r.s.clock }

// Advance does nothing: Round applies each event.
func (r *idealEvents) Advance() (float64, error) { return r.s.clock.Now(), nil }

// Admit adds the jobs arriving by now (the first round's; later ones
// join at the end of the Round whose event they are due at).
func (r *idealEvents) Admit(ctx context.Context) error { return r.admit(ctx, r.s.clock.Now()) }

// admit adds the jobs arriving by t (addJob reads their arrival times, not
// the clock).
func (r *idealEvents) admit(ctx context.Context, t float64) error {
	return r.arr.Due(ctx, t, func(j Job) error { return r.s.addJob(j, r.tp, j.ArrivalS) })
}

// Round jumps to the next arrival when no job is active (the run ends when
// none is to come), else applies the allocation until the next event; then
// admits the arrivals due at the event, whose time it names.
func (r *idealEvents) Round() (simcore.Step, float64, error) {
	s := r.s
	next, more := r.arr.Next()
	at := next.ArrivalS
	end, step := at, simcore.Idle
	switch {
	case len(s.active) == 0 && !more:
		return simcore.End, 0, nil
	case len(s.active) > 0:
		var err error
		if end, err = s.idealStep(at, more, r.busy); err != nil {
			return simcore.End, 0, err
		}
		step = simcore.Ran
	}
	return step, end, r.admit(r.ctx, end)
}

// idealStep allocates, runs every job at its allocated rate until the
// next arrival or the first completion, and completes the jobs done; it
// returns the time of that event.
func (s *simulator) idealStep(at float64, more bool, busy []float64) (float64, error) {
	if s.packing != nil {
		return 0, fmt.Errorf("ideal mode does not run packing policies (%s)", s.policy.Name())
	}
	a, err := s.policy.Allocate(s.state())
	if err != nil {
		return 0, fmt.Errorf("t=%.1f s: allocation: %w", s.clock.Now(), err)
	}
	if err := s.checkAllocation(allocation{single: a}); err != nil {
		return 0, err
	}
	s.allocs++
	rates := make(map[int]float64, len(s.active))
	dt := math.Inf(1)
	if more {
		dt = at - s.clock.Now()
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
		return 0, fmt.Errorf("t=%.1f s: stalled: %d active jobs get no throughput and no job arrives", s.clock.Now(), len(s.active))
	}
	end := s.clock.Now() + dt
	s.res.Rounds++
	for _, id := range append([]int(nil), s.active...) {
		js := s.jobs[id]
		for t, x := range a[id] {
			busy[t] += x * float64(js.job.ScaleFactor) * dt
		}
		js.stepsRun += rates[id] * dt
		if js.job.TotalSteps-js.stepsRun <= 1e-9*js.job.TotalSteps {
			js.latest = end
			s.removeJob(id, false)
		}
	}
	return end, nil
}
