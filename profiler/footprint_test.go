package profiler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	// The most anonymous memory (350 MiB at cpus=2) and the least page
	// cache (10 MiB, the job's own files): the 200 MiB cpus=1 held beside
	// them were dataset pages its cgroup had read.
	if got, want := footprint(cells), int64(360<<20); got != want {
		t.Errorf("footprint = %d MiB, want %d MiB (350 anon at cpus=2 + 10 framework cache)", got>>20, want>>20)
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

// noCache is a page cache that does nothing: the footprint is noted only
// when the sweep controls the cache.
type noCache struct{}

func (noCache) Evict(string) (int, error)             { return 0, nil }
func (noCache) Resident(string) (int64, int64, error) { return 0, 0, nil }
func (noCache) Warm(string) error                     { return nil }

// eventLog records point starts and notes in order.
type eventLog struct{ events []string }

func (l *eventLog) PointStart(_ int, _ string, label string) {
	l.events = append(l.events, "start "+label)
}
func (l *eventLog) PointUpdate(string, int, Estimate, time.Duration)  {}
func (l *eventLog) PointDone(string, sensitivity.Cell, time.Duration) {}
func (l *eventLog) Note(msg string)                                   { l.events = append(l.events, "note "+msg) }

// A memory limit given at or below the job's own memory is warned about,
// naming the footprint, before that column's first point runs; a limit
// above it is not, and the axis' start is said relative to the footprint.
func TestRun_WarnsOfLimitsAtTheFootprintBeforeMeasuringThem(t *testing.T) {
	const anon = 100 << 20
	lr := &liveRunner{rate: fastRate, anon: anon}
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Cache = lr, noCache{}
	cfg.CPUs = []float64{1}
	cfg.MemLimits = []int64{96 << 20, 1 << 30}
	cfg.Strategy = StrategyGrid
	log := &eventLog{}
	cfg.Progress = log
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Job.FootprintBytes != anon {
		t.Fatalf("footprint %d, want the job's %d", p.Job.FootprintBytes, anon)
	}
	warned, started := -1, -1
	for i, e := range log.events {
		switch {
		case strings.HasPrefix(e, "note warning: memory limit 96MiB is at or below the job's own footprint (100MiB"):
			warned = i
		case strings.Contains(e, "memory limit 1GiB"):
			t.Errorf("warned of a limit above the footprint: %s", e)
		case strings.HasPrefix(e, "start") && strings.Contains(e, "mem=96MiB") && started < 0:
			started = i
		}
	}
	if warned < 0 || started < 0 || warned > started {
		t.Errorf("the warning naming the footprint (event %d) must come before the 96MiB point starts (event %d): %q", warned, started, log.events)
	}
	if len(p.Warnings) == 0 || !strings.Contains(strings.Join(p.Warnings, "\n"), "100MiB") {
		t.Errorf("the profile's warnings do not name the footprint: %q", p.Warnings)
	}
}

// With every limit above the footprint, no warning, and a note says how
// far above it the axis starts.
func TestRun_SaysTheMemoryAxisStartsAboveTheFootprint(t *testing.T) {
	lr := &liveRunner{rate: fastRate, anon: 100 << 20}
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Cache = lr, noCache{}
	cfg.CPUs = []float64{1}
	cfg.MemLimits = []int64{612 << 20}
	cfg.Strategy = StrategyGrid
	log := &eventLog{}
	cfg.Progress = log
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %q, want none", p.Warnings)
	}
	want := "note memory axis starts at 612MiB, 512MiB above the job's own footprint of 100MiB"
	if n := strings.Count(strings.Join(log.events, "\n"), "note memory axis starts"); n != 1 || !slices.ContainsFunc(log.events, func(e string) bool { return strings.HasPrefix(e, want) }) {
		t.Errorf("want one note %q, got %q", want, log.events)
	}
}
