package simcore

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// fakeRounds is a workload of jobs that each take one round: arrivals at
// the given times, a clock that moves one round (10 s) per Advance when
// something ran and jumps to the next arrival otherwise.
type fakeRounds struct {
	arrivals []float64
	clock    Clock
	queued   int
	running  int
	done     int
	phases   []string
}

func (f *fakeRounds) Over() bool    { return f.done == 3 }
func (f *fakeRounds) Clock() *Clock { return &f.clock }
func (f *fakeRounds) Advance() (float64, error) {
	f.phases = append(f.phases, "advance")
	if f.running > 0 {
		f.done += f.running
		f.running = 0
		return f.clock.Now() + 10, nil
	} else if len(f.arrivals) > 0 {
		return f.arrivals[0], nil
	}
	return f.clock.Now(), nil
}
func (f *fakeRounds) Admit(context.Context) error {
	f.phases = append(f.phases, "admit")
	for len(f.arrivals) > 0 && f.arrivals[0] <= f.clock.Now() {
		f.arrivals = f.arrivals[1:]
		f.queued++
	}
	return nil
}
func (f *fakeRounds) Round() (Step, float64, error) {
	f.phases = append(f.phases, "round")
	if f.queued == 0 {
		return Idle, f.clock.Now(), nil
	}
	f.running, f.queued = f.queued, 0
	return Ran, f.clock.Now(), nil
}

func TestLoop_PhasesAndRounds(t *testing.T) {
	// Jobs at 0, 5 and 100 s: round 1 at 0 runs job 0 (0-10 s); round 2 at
	// 10 runs job 1; round 3 at 20 runs nothing (Idle); round 4 jumps to 100
	// and runs job 2; round 5 completes it at 110 and is Idle; the check
	// before round 6 sees 3 done (Over is looked at before Advance, as
	// Gavel's loop does: 5 rounds).
	f := &fakeRounds{arrivals: []float64{0, 5, 100}}
	out, err := Loop(context.Background(), f, Limits{})
	if err != nil || out.Rounds != 5 || out.Truncated || f.clock.Now() != 110 {
		t.Fatalf("outcome %+v, err %v, clock %v", out, err, f.clock.Now())
	}
	if f.phases[0] != "advance" || f.phases[1] != "admit" || f.phases[2] != "round" {
		t.Errorf("phase order %v", f.phases[:3])
	}
}

func TestLoop_Limits(t *testing.T) {
	out, err := Loop(context.Background(), &fakeRounds{arrivals: []float64{0, 5, 100}}, Limits{MaxS: 15})
	// rounds at 0 and 10 run; the clock is then 20 > 15.
	if err != nil || !out.Truncated || out.Rounds != 3 {
		t.Errorf("MaxS: %+v, %v", out, err)
	}
	if _, err := Loop(context.Background(), &fakeRounds{arrivals: []float64{0, 5, 100}}, Limits{MaxRounds: 2}); !errors.Is(err, ErrRoundLimit) {
		t.Errorf("MaxRounds: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := Loop(ctx, &fakeRounds{arrivals: []float64{0}}, Limits{}); !errors.Is(err, context.Canceled) || out.Rounds != 0 {
		t.Errorf("cancelled: %+v, %v", out, err)
	}
}

func TestWindowCount_Complete(t *testing.T) {
	c := WindowCount{Window: Window{First: 2, Last: 3}}
	for _, id := range []int{0, 1, 2} {
		c.Arrive(id)
	}
	c.Finish(0)
	c.Finish(2)
	// job 2 of 2-3 arrived and finished, job 3 not yet arrived.
	if c.Seen != 1 || c.Done != 1 || c.Complete(false) {
		t.Fatalf("%+v: complete before job 3", c)
	}
	if !c.Complete(true) {
		t.Errorf("%+v: closed (no job 3 will come) but not complete", c)
	}
	c.Arrive(3)
	if c.Complete(true) {
		t.Errorf("%+v: job 3 running", c)
	}
	c.Finish(3)
	if !c.Complete(false) {
		t.Errorf("%+v: both done", c)
	}
}

// waiting is a run whose rounds run nothing: its steps are scripted, and
// its clock moves by the scripted amount each round.
type waiting struct {
	steps []Step
	moves []float64
	clock Clock
	n     int
}

func (w *waiting) Clock() *Clock               { return &w.clock }
func (w *waiting) Over() bool                  { return w.n >= len(w.steps) }
func (w *waiting) Advance() (float64, error)   { return w.clock.Now() + w.moves[w.n], nil }
func (w *waiting) Admit(context.Context) error { return nil }
func (w *waiting) Round() (Step, float64, error) {
	w.n++
	return w.steps[w.n-1], w.clock.Now(), nil
}

func TestLoop_AStalledRunFails(t *testing.T) {
	W, R := Waited, Ran
	cases := []struct {
		name    string
		steps   []Step
		moves   []float64
		stalled bool
		rounds  int
	}{
		// Three Waited rounds in a row, the clock still: a stall after the third.
		{"still", []Step{R, W, W, W, R}, []float64{0, 0, 0, 0, 0}, true, 4},
		// Waited rounds whose clock moves are waiting for something: no stall.
		{"moving", []Step{W, W, W, W}, []float64{1, 1, 1, 1}, false, 4},
		// A round that ran, or one that moved the clock, starts the count again.
		{"interrupted", []Step{W, W, R, W, W, W, W}, []float64{0, 0, 0, 0, 0, 5, 0}, false, 7},
	}
	for _, c := range cases {
		w := &waiting{steps: c.steps, moves: c.moves}
		out, err := Loop(context.Background(), w, Limits{})
		if got := errors.Is(err, ErrStalled); got != c.stalled || out.Rounds != c.rounds {
			t.Errorf("%s: %d rounds, err %v; want %d rounds, stalled %v", c.name, out.Rounds, err, c.rounds, c.stalled)
		}
	}
}

// backwards is a run whose Advance or Round names a time before the clock.
type backwards struct {
	clock Clock
	in    string // the phase that goes back
}

func (b *backwards) Clock() *Clock               { return &b.clock }
func (b *backwards) Over() bool                  { return false }
func (b *backwards) Admit(context.Context) error { return nil }
func (b *backwards) Advance() (float64, error) {
	if b.in == "advance" {
		return b.clock.Now() - 1, nil
	}
	return b.clock.Now(), nil
}
func (b *backwards) Round() (Step, float64, error) {
	if b.in == "round" {
		return Ran, b.clock.Now() - 5, nil
	}
	return Ran, b.clock.Now() + 10, nil
}

// The loop owns the clock: it moves it to the times the phases name, and a
// phase that names an earlier time, or no number, fails the run with both
// times, the clock left where it was.
func TestLoop_TheClockOnlyMovesForward(t *testing.T) {
	for _, in := range []string{"advance", "round"} {
		b := &backwards{clock: *NewClock(100), in: in}
		out, err := Loop(context.Background(), b, Limits{MaxRounds: 3})
		want := "from 100 s to 99 s"
		if in == "round" {
			want = "from 100 s to 95 s"
		}
		if err == nil || !strings.Contains(err.Error(), want) || out.Rounds != 0 || b.clock.Now() != 100 {
			t.Errorf("%s goes back: %d rounds, clock %v, err %v; want an error naming %q", in, out.Rounds, b.clock.Now(), err, want)
		}
	}
	b := &backwards{clock: *NewClock(100)}
	out, err := Loop(context.Background(), b, Limits{MaxRounds: 3})
	if !errors.Is(err, ErrRoundLimit) || out.Rounds != 3 || b.clock.Now() != 130 {
		t.Errorf("forward: %d rounds, clock %v, err %v; want 3 rounds to 130 s", out.Rounds, b.clock.Now(), err)
	}
	c := NewClock(1)
	if err := c.moveTo(math.NaN()); err == nil || c.Now() != 1 {
		t.Errorf("NaN: %v, clock %v", err, c.Now())
	}
}
