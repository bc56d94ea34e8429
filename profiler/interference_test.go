package profiler

import (
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// A point during which the host spent more than a quarter core on other
// work is warned about, naming the point and the figures; one on a quiet
// host, an unsampled one and a failed one are not.
func TestNoteInterference(t *testing.T) {
	cell := func(hostPct, cores float64, failed bool) sensitivity.Cell {
		c := sensitivity.Cell{CPUs: 2, Measured: true, Stats: &sensitivity.PointStats{HostCPUPctMean: hostPct, CPUCoresMean: cores}}
		if failed {
			c.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		c    sensitivity.Cell
		warn string
	}{
		{"busy host", cell(94, 1.51, false), "cpus=2 mem=unlimited: other work on this host used 0.37 cores on average while the point ran (the host 94% busy, the job 1.51 cores)"},
		{"quiet host", cell(80, 1.5, false), ""},
		{"not sampled", cell(0, 1.5, false), ""},
		{"failed", cell(94, 1.51, true), ""},
	} {
		s := newSweep(Config{}, Deps{}).rec
		s.prof = &sensitivity.Profile{Host: sensitivity.HostInfo{LogicalCPUs: 2}}
		s.noteInterference(tc.c)
		got := strings.Join(s.warnings, "\n")
		if (tc.warn == "") != (got == "") || !strings.HasPrefix(got, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.name, got, tc.warn)
		}
	}
}

// A profile whose points' CPUs ran more than a tenth apart says so, naming
// the slowest and the fastest point; failed, predicted and unsampled cells
// do not count.
func TestSpeedNote(t *testing.T) {
	cell := func(cpus float64, mem int64, mops float64) sensitivity.Cell {
		return sensitivity.Cell{CPUs: cpus, MemLimitBytes: mem, Measured: true, Stats: &sensitivity.PointStats{CPUSpeedMOps: mops}}
	}
	failed := cell(1, 0, 100)
	failed.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed}
	predicted := cell(1, 1<<30, 100)
	predicted.Measured = false
	unsampled := cell(2, 1<<30, 0)
	for _, tc := range []struct {
		name  string
		cells []sensitivity.Cell
		warn  string
	}{
		{"apart", []sensitivity.Cell{cell(1, 0, 600), cell(2, 0, 650), cell(1, 768<<20, 500), failed, predicted, unsampled},
			"the host's CPUs ran at different speeds for different points: a fixed loop on the point's CPUs (cpu_speed_mops) ran 23% slower at cpus=1 mem=768MiB (500) than at cpus=2 mem=unlimited (650)"},
		{"within a tenth", []sensitivity.Cell{cell(1, 0, 600), cell(2, 0, 650), failed, predicted, unsampled}, ""},
		{"one point", []sensitivity.Cell{cell(1, 0, 600), failed, predicted}, ""},
		{"none sampled", []sensitivity.Cell{unsampled, cell(1, 0, 0)}, ""},
	} {
		got := speedNote(&sensitivity.Profile{Cells: tc.cells})
		if (tc.warn == "") != (got == "") || !strings.HasPrefix(got, tc.warn) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.warn)
		}
	}
}
