package profiler

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// anonByWorkers is a job whose own memory grows with its loader workers:
// 100 MiB and 50 MiB a worker (one worker per core here).
func anonByWorkers(l runner.Limits) int64 {
	w := int64(max(1, int(l.CPUs+0.999)))
	return (100 + 50*w) << 20
}

// A memory axis drawn from the dataset alone (the placeholder: 50 MiB) is
// set from the job's footprint before the first limited point: 200 MiB at
// the grid's most workers (2), 125%, plus fractions of a tiny dataset.
func TestRun_MemAxisFittedToTheJob(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, anon: anonByWorkers}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = []int64{50 << 20}
	cfg.MemAxisFromJob = true
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{250 << 20, 0}; !slices.Equal(p.Axes.MemLimitBytes, want) {
		t.Fatalf("memory axis %v, want %v", p.Axes.MemLimitBytes, want)
	}
	if !strings.Contains(p.Axes.MemFrom, "footprint with 2 loader workers is 200MiB") {
		t.Errorf("mem_from = %q, want it to say the footprint it was fitted to", p.Axes.MemFrom)
	}
	for _, c := range p.Cells {
		if c.MemLimitBytes == 50<<20 {
			t.Errorf("a cell of the placeholder axis is left: %+v", c)
		}
		if c.Measured && c.MemLimitBytes == 250<<20 && c.Failure != nil {
			t.Errorf("limited cell failed: %+v", c.Failure)
		}
	}
	// Given limits are kept and said so.
	cfg = baseConfig(t, &fakeRunner{rate: trueRate, anon: anonByWorkers})
	cfg.CPUs, cfg.MemLimits = []float64{1}, []int64{1 << 30}
	if p, err = run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if p.Axes.MemFrom != "given" || !slices.Equal(p.Axes.MemLimitBytes, []int64{1 << 30, 0}) {
		t.Errorf("given axis: %v from %q", p.Axes.MemLimitBytes, p.Axes.MemFrom)
	}
}

// Issue 44: the footprint a fitted axis rests on includes a whole pass and
// what follows it (a script's evaluation: its peak): the unlimited point at
// the most CPUs runs past its first pass's end though its figure converged
// long before, and the axis says so.
func TestRun_FootprintSpansAWholePass(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, anon: anonByWorkers, epochIters: 120}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = []int64{50 << 20}
	cfg.MemAxisFromJob = true
	cfg.MaxIterations = 40
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Cell(2, 0); c == nil || c.Stats == nil || c.Stats.Iterations <= 120 {
		t.Fatalf("2-core unlimited cell %+v, want it past its first pass of 120 iterations", c)
	}
	if c := p.Cell(1, 0); c == nil || c.Stats == nil || c.Stats.Iterations > 120 {
		t.Errorf("1-core unlimited cell ran %d iterations: only the most workers' point waits for the pass", c.Stats.Iterations)
	}
	if !strings.Contains(p.Axes.MemFrom, "over a whole pass and what follows it") {
		t.Errorf("mem_from = %q, want it to say the footprint covers a whole pass", p.Axes.MemFrom)
	}
}

// A limit at or below the job's own memory at its workers is never
// launched: its cell is a predicted OOM kill with the reason.
func TestRun_LimitBelowFootprintIsAPredictedOOM(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, anon: anonByWorkers}
	cfg := baseConfig(t, fr)
	cfg.Strategy = StrategyGrid
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = []int64{160 << 20, 1 << 30} // 1 core: 150 MiB; 2 cores: 200 MiB
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fr.started != 5 {
		t.Errorf("%d jobs started, want 5 of the 6 cells (2 cores at 160MiB predicted)", fr.started)
	}
	c := p.Cell(2, 160<<20)
	if c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailOOMKilled ||
		!strings.Contains(c.Failure.Message, "not launched: an OOM kill is predicted") || !strings.Contains(c.Failure.Message, "2 loader workers is 200MiB") {
		t.Fatalf("2 cores at 160MiB: %+v, want a predicted OOM with its reason", c)
	}
	if c := p.Cell(1, 160<<20); c == nil || c.Failure != nil {
		t.Errorf("1 core at 160MiB (footprint 150MiB): %+v, want it measured", c)
	}
}

func TestFootprintAt(t *testing.T) {
	cell := func(cpus float64, anon int64) sensitivity.Cell {
		return sensitivity.Cell{CPUs: cpus, Measured: true, SamplesPerS: 1, Stats: &sensitivity.PointStats{Workers: int(cpus), MemAnonBytes: anon}}
	}
	cells := []sensitivity.Cell{cell(1, 979), cell(4, 1600), cell(16, 3540)}
	for _, tc := range []struct {
		w    int
		want int64
		ok   bool
	}{{1, 979, true}, {4, 1600, true}, {10, 2570, true}, {16, 3540, true}, {20, 4186, true}, {2, 1186, true}} {
		got, ok := footprintAt(cells, 1, tc.w)
		if ok != tc.ok || got != tc.want {
			t.Errorf("footprintAt(%d workers) = %d, %v; want %d", tc.w, got, ok, tc.want)
		}
	}
	if _, ok := footprintAt(cells[:1], 1, 2); ok {
		t.Error("one point measured at 1 worker predicts 2")
	}
	if got, ok := footprintAt(cells[1:2], 1, 1); !ok || got != 1600 {
		t.Errorf("fewer workers than the one point measured: %d, %v; want its figure, a bound", got, ok)
	}
}
