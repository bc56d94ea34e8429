package simcore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Rounds is one engine's part of the round loop, the plugin that Loop runs
// (as kube-scheduler's framework runs its plugins): the engine owns its
// state and what each phase does; Loop owns the loop itself — the order of
// the phases, the clock, cancellation, the round count and the limits.
// Every round is, in this order: Over (has the run ended?), Advance (what
// the running round ran completes, and the clock moves to the time it
// names: the round's end), Admit (the jobs that have arrived by then join),
// Round (allocation and placement for the next round, which starts; the
// clock moves to the time it names).
//
// Gavel's engine (scheduler/gavel) ends a round when its last micro-task
// does: its Advance completes the micro-tasks and names that time, and its
// Round names the clock's own time. Synergy's (scheduler/sim) credits a
// round when it places it (its original's instant credit): its Round runs
// the round and names its lease end, and its Advance names the clock's
// time. Gavel's ideal mode applies one event per Round and names its time.
type Rounds interface {
	// Clock is the run's clock, which the engine made at the run's
	// origin (NewClock) and which only Loop moves.
	Clock() *Clock
	// Over reports whether the run has ended (its window's jobs, or all
	// of its jobs, are done).
	Over() bool
	// Advance completes what the running round ran and returns the time
	// the round ended (the next arrival when nothing ran; the clock's time
	// when nothing moves it). Loop moves the clock there.
	Advance() (float64, error)
	// Admit adds the jobs that have arrived by the clock. It may look at
	// ctx while many jobs arrive at once.
	Admit(ctx context.Context) error
	// Round allocates and places the admitted jobs and starts the round;
	// it returns what it did and the time the clock moves to now (a
	// round credited when placed: its end; an Idle round: the round of
	// the next arrival; else the clock's time).
	Round() (Step, float64, error)
}

// Step is what a Round did.
type Step int

const (
	// Ran: a round was placed and run; it counts.
	Ran Step = iota
	// Idle: nothing was queued, so the clock jumped to the next arrival;
	// it counts as a round (as Synergy's original counts it).
	Idle
	// End: nothing can run and nothing will arrive: the run is over and
	// the round does not count.
	End
	// Waited: the round ran nothing and no job is due to arrive, though
	// jobs remain; it counts. Such rounds in a row that leave the clock
	// where it was are a run that can never progress: after stallRounds
	// of them Loop fails it (ErrStalled) rather than loop forever.
	Waited
)

// stallRounds is how many Waited rounds in a row, the clock standing
// still, make a stall.
const stallRounds = 3

// Limits bound a Loop.
type Limits struct {
	// MaxRounds, when > 0, fails a run that has not ended after that many
	// rounds (ErrRoundLimit).
	MaxRounds int
	// MaxS, when > 0, ends a run (Outcome.Truncated) once its clock has
	// passed it, before the next round.
	MaxS float64
	// CheckEvery is how often, in rounds, the loop looks at ctx (1 when
	// 0): a round can be cheaper than the look.
	CheckEvery int
	// Progress, when set, is called from the loop, when it looks at ctx,
	// at most every ProgressEvery of wall-clock time (2 s when 0), with
	// the rounds run and the simulated clock: a long run shows life.
	Progress      func(rounds int, nowS float64)
	ProgressEvery time.Duration
}

// Outcome is how a Loop ended.
type Outcome struct {
	// Rounds counts the rounds run (Ran and Idle).
	Rounds int
	// Truncated says Limits.MaxS ended the run.
	Truncated bool
}

// ErrRoundLimit is the error of a run that reached Limits.MaxRounds.
var ErrRoundLimit = errors.New("round limit reached")

// ErrStalled is the error of a run that can never progress: stallRounds
// Waited rounds in a row with the clock standing still.
var ErrStalled = errors.New("stalled: jobs remain, none can run, the clock stands still and no job is due to arrive")

// Loop runs r's rounds until r is over, its Round says End, a limit is met,
// the run stalls (ErrStalled, wrapped with the clock) or ctx is done (its
// error is then returned as it is, with the rounds run so far). Errors of
// r's phases are returned as they are; a phase that would move the clock
// backwards fails the run.
func Loop(ctx context.Context, r Rounds, lim Limits) (Outcome, error) {
	var out Outcome
	clock := r.Clock()
	every := max(lim.CheckEvery, 1)
	stalls := 0
	tick := lim.ProgressEvery
	if tick <= 0 {
		tick = 2 * time.Second
	}
	var last time.Time
	if lim.Progress != nil {
		last = time.Now()
	}
	for iter := 0; ; iter++ {
		if iter%every == 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			if lim.Progress != nil {
				if now := time.Now(); now.Sub(last) >= tick {
					last = now
					lim.Progress(out.Rounds, clock.Now())
				}
			}
		}
		if r.Over() {
			return out, nil
		}
		if lim.MaxS > 0 && clock.Now() > lim.MaxS {
			out.Truncated = true
			return out, nil
		}
		if lim.MaxRounds > 0 && out.Rounds >= lim.MaxRounds {
			return out, ErrRoundLimit
		}
		before := clock.Now()
		step, err := phases(ctx, r, clock)
		if err != nil {
			return out, err
		}
		if step == End {
			return out, nil
		}
		out.Rounds++
		if step != Waited || clock.Now() != before {
			stalls = 0
		} else if stalls++; stalls >= stallRounds {
			return out, fmt.Errorf("t=%.1f s: %w", clock.Now(), ErrStalled)
		}
	}
}

// phases runs one round's Advance, Admit and Round, moving the clock to
// the times Advance and Round name.
func phases(ctx context.Context, r Rounds, clock *Clock) (Step, error) {
	to, err := r.Advance()
	if err == nil {
		err = clock.moveTo(to)
	}
	if err != nil {
		return End, err
	}
	if err := r.Admit(ctx); err != nil {
		return End, err
	}
	step, to, err := r.Round()
	if err == nil && step != End {
		err = clock.moveTo(to)
	}
	if err != nil {
		return End, err
	}
	return step, nil
}
