package profiler

import (
	"os"
	"path/filepath"
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

// A Python job's default memory axis leaves room for the framework: every
// limit is above PythonWorkingSetBytes, while another job's starts lower.
func TestDefaultMemLimitsFor(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 44<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	py, err := DefaultMemLimitsFor(dir, []string{"/usr/bin/python3", "main.py"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := DefaultMemLimitsFor(dir, []string{"bin/synthtrain"})
	if err != nil {
		t.Fatal(err)
	}
	if len(py) == 0 || py[0] <= PythonWorkingSetBytes {
		t.Errorf("python axis %v does not start above %d MiB", py, PythonWorkingSetBytes>>20)
	}
	if len(other) == 0 || other[0] >= py[0] || other[0] > 128<<20 {
		t.Errorf("synthtrain axis %v, want it to start lower than the python axis %v", other, py)
	}
}
