package simcore

import (
	"context"
	"testing"
	"time"
)

// Progress hears the loop while it runs: with a tick shorter than a
// round every look at ctx reports, with the rounds so far and the clock,
// both never decreasing; without Progress nothing is called.
func TestLoop_ProgressReportsRoundsAndClock(t *testing.T) {
	f := &fakeRounds{arrivals: []float64{0, 5, 100}}
	var rounds []int
	var clocks []float64
	out, err := Loop(context.Background(), f, Limits{ProgressEvery: time.Nanosecond, Progress: func(r int, now float64) {
		time.Sleep(time.Microsecond) // the next look is a tick later
		rounds, clocks = append(rounds, r), append(clocks, now)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) < out.Rounds {
		t.Fatalf("%d reports over %d rounds, want one per round", len(rounds), out.Rounds)
	}
	for i := 1; i < len(rounds); i++ {
		if rounds[i] < rounds[i-1] || clocks[i] < clocks[i-1] {
			t.Errorf("report %d: rounds %d at %v s after %d at %v s", i, rounds[i], clocks[i], rounds[i-1], clocks[i-1])
		}
	}
	if last := clocks[len(clocks)-1]; last < 100 {
		t.Errorf("last report at %v s, want the run's last rounds (past 100 s)", last)
	}
}
