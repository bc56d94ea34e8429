package profiler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

// errTimeBudget ends a sweep whose Config.TimeBudget is spent; Run saves
// the profile and returns it without an error.
var errTimeBudget = errors.New("the time budget is spent")

// budgetLeft is the time left of Config.TimeBudget for this run (resumed
// runs' time is not counted); ok=false when there is no budget.
func (s *recorder) budgetLeft() (left time.Duration, ok bool) {
	if s.cfg.TimeBudget <= 0 {
		return 0, false
	}
	return s.cfg.TimeBudget - s.deps.Now().Sub(s.started), true
}

// checkBudget returns errTimeBudget once the budget is spent: the sweep
// stops between points, never inside one.
func (s *recorder) checkBudget() error {
	if left, ok := s.budgetLeft(); ok && left <= 0 {
		if s.deps.Progress != nil {
			s.deps.Progress.Note(fmt.Sprintf("time budget of %s spent: stopping with %d point(s) measured", s.cfg.TimeBudget, s.prof.Cost.Points))
		}
		return errTimeBudget
	}
	return nil
}

// setStop records how this run of the sweep ended (sensitivity.SweepStop*)
// from the error that ended it; nil and errTimeBudget end it well.
func (s *recorder) setStop(err error) {
	c := &s.prof.Cost
	c.TimeBudgetSeconds = s.cfg.TimeBudget.Seconds()
	switch {
	case err == nil && s.budgetShort:
		c.StopReason = sensitivity.SweepStopTimeBudget
	case err == nil:
		c.StopReason = sensitivity.SweepStopComplete
	case errors.Is(err, errTimeBudget):
		c.StopReason = sensitivity.SweepStopTimeBudget
	case errors.Is(err, errInterrupted), errors.Is(err, ErrInterrupted):
		c.StopReason = sensitivity.SweepStopInterrupted
	}
}

// addCost adds a measured point's warm-up and measurement seconds to the
// profile's totals.
func (s *recorder) addCost(c sensitivity.Cell) {
	if c.Stats == nil {
		return
	}
	s.prof.Cost.WarmupSeconds += c.Stats.WarmupSeconds
	s.prof.Cost.MeasureSeconds += c.Stats.MeasureSeconds
}

// noteTimeLeft reports the elapsed time and an estimate of the time left
// after a point: the mean seconds per point of this run times the points
// the strategy may still measure (its totalHint, a bound for optimistic),
// capped by the time budget.
func (s *recorder) noteTimeLeft(done int, total string) {
	if s.deps.Progress == nil {
		return
	}
	elapsed := s.deps.Now().Sub(s.started)
	msg := fmt.Sprintf("elapsed %s", elapsed.Round(time.Second))
	n, err := strconv.Atoi(strings.TrimPrefix(total, "≤"))
	if err == nil && done > 0 && n >= done {
		left := time.Duration(float64(elapsed) / float64(done) * float64(n-done))
		if b, ok := s.budgetLeft(); ok {
			left = max(0, min(left, b))
		}
		approx := "about "
		if strings.HasPrefix(total, "≤") {
			approx = "at most about "
		}
		msg += fmt.Sprintf(", %s%s left (%d of %s points)", approx, left.Round(time.Second), done, total)
	}
	if b, ok := s.budgetLeft(); ok {
		msg += fmt.Sprintf("; time budget %s, %s left", s.cfg.TimeBudget, max(0, b).Round(time.Second))
	}
	s.deps.Progress.Note(msg)
}
