package profiler

import (
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// The footprint comes from warm, unlimited-memory cells that ended well
// only: a cold or limited cell's cache holds the dataset, a failed one's
// figures are not the job's running state.
func TestFootprint(t *testing.T) {
	st := func(anon, cache int64, cold bool) *sensitivity.PointStats {
		return &sensitivity.PointStats{MemAnonBytes: anon, MemCacheBytes: cache, ColdStart: cold}
	}
	cells := []sensitivity.Cell{
		{CPUs: 1, Measured: true, Stats: st(300<<20, 200<<20, false)},
		{CPUs: 2, Measured: true, Stats: st(350<<20, 10<<20, false)},
		{CPUs: 2, MemLimitBytes: 1 << 30, Measured: true, Stats: st(350<<20, 600<<20, true)},
		{CPUs: 4, Measured: true, Stats: st(900<<20, 0, false), Failure: &sensitivity.Failure{Class: sensitivity.FailCrashed}},
		{CPUs: 8, Measured: false, SamplesPerS: 1},
	}
	if got, want := footprint(cells), int64(500<<20); got != want {
		t.Errorf("footprint = %d MiB, want %d MiB (cpus=1: 300 anon + 200 framework cache)", got>>20, want>>20)
	}
	if got := footprint(cells[2:]); got != 0 {
		t.Errorf("footprint of cold, failed and predicted cells = %d, want 0 (not measured)", got)
	}
}
