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
		s := &sweep{prof: &sensitivity.Profile{Host: sensitivity.HostInfo{LogicalCPUs: 2}}}
		s.noteInterference(tc.c)
		got := strings.Join(s.warnings, "\n")
		if (tc.warn == "") != (got == "") || !strings.HasPrefix(got, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.name, got, tc.warn)
		}
	}
}
