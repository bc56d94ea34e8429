package simcore

import (
	"fmt"
	"math"
)

// Clock is a run's simulated time in seconds. Loop moves it, to the times
// the engine's phases name, and only forward; the engine reads it. An
// engine makes its clock at the run's origin (NewClock) and hands it to the
// loop through Rounds.Clock.
type Clock struct {
	now float64
}

// NewClock returns a clock at origin (seconds), where the run's first
// round begins.
func NewClock(origin float64) *Clock { return &Clock{now: origin} }

// Now is the simulated time in seconds.
func (c *Clock) Now() float64 { return c.now }

// moveTo moves the clock to t. A clock never runs backwards, and a time
// that is not a number is no time: either is an engine's error (not the
// workload's), returned with both times, and the clock stays.
func (c *Clock) moveTo(t float64) error {
	if math.IsNaN(t) || t < c.now {
		return fmt.Errorf("the clock would move from %v s to %v s: it only moves forward", c.now, t)
	}
	c.now = t
	return nil
}
