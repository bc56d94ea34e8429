package simcore

import (
	"context"
	"errors"
	"fmt"
)

// Rounds is one engine's part of the round loop, the plugin that Loop runs
// (as kube-scheduler's framework runs its plugins): the engine owns its
// state, its clock and what each phase does; Loop owns the loop itself —
// the order of the phases, cancellation, the round count and the limits.
// Every round is, in this order: Over (has the run ended?), Advance (the
// clock moves to the end of the running round and what it ran completes),
// Admit (the jobs that have arrived by then join), Round (allocation and
// placement for the next round, which starts).
//
// Gavel's engine (scheduler/gavel) fills every phase: its rounds end when
// their last micro-task does, so Advance completes the micro-tasks and
// Round starts the next ones. Synergy's (scheduler/sim) credits a round when
// it places it (its original's instant credit), so its Round runs the round
// to its lease end and its Advance does nothing.
type Rounds interface {
	// Over reports whether the run has ended (its window's jobs, or all
	// of its jobs, are done).
	Over() bool
	// Advance moves the clock to the end of the running round (to the
	// next arrival when nothing runs) and completes what the round ran.
	Advance() error
	// Admit adds the jobs that have arrived by the clock. It may look at
	// ctx while many jobs arrive at once.
	Admit(ctx context.Context) error
	// Round allocates and places the admitted jobs and starts the round.
	Round() (Step, error)
	// Now is the simulated clock in seconds.
	Now() float64
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
// r's phases are returned as they are.
func Loop(ctx context.Context, r Rounds, lim Limits) (Outcome, error) {
	var out Outcome
	every := max(lim.CheckEvery, 1)
	stalls := 0
	for iter := 0; ; iter++ {
		if iter%every == 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
		}
		if r.Over() {
			return out, nil
		}
		if lim.MaxS > 0 && r.Now() > lim.MaxS {
			out.Truncated = true
			return out, nil
		}
		if lim.MaxRounds > 0 && out.Rounds >= lim.MaxRounds {
			return out, ErrRoundLimit
		}
		before := r.Now()
		step, err := phases(ctx, r)
		if err != nil {
			return out, err
		}
		if step == End {
			return out, nil
		}
		out.Rounds++
		if step != Waited || r.Now() != before {
			stalls = 0
		} else if stalls++; stalls >= stallRounds {
			return out, fmt.Errorf("t=%.1f s: %w", r.Now(), ErrStalled)
		}
	}
}

// phases runs one round's Advance, Admit and Round.
func phases(ctx context.Context, r Rounds) (Step, error) {
	if err := r.Advance(); err != nil {
		return End, err
	}
	if err := r.Admit(ctx); err != nil {
		return End, err
	}
	return r.Round()
}
