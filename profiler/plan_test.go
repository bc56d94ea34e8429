package profiler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// measuredSet lists a profile's measured cells as "cpus/MiB" (0 = unlimited).
func measuredSet(p *sensitivity.Profile, phase string) []string {
	var out []string
	for _, c := range p.Cells {
		if c.Measured && (phase == "" || c.Phase == phase) {
			out = append(out, fmt.Sprintf("%g/%d", c.CPUs, c.MemLimitBytes>>20))
		}
	}
	sort.Strings(out)
	return out
}

func TestStrategy_GridMeasuresEveryCell(t *testing.T) {
	cfg := baseConfig(t, &fakeRunner{rate: trueRate})
	cfg.Strategy = StrategyGrid
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 3 CPU counts × (2 limits + unlimited)
	if got := len(measuredSet(p, "")); got != 9 || p.Cost.Points != 9 || p.Strategy != StrategyGrid {
		t.Fatalf("measured %d cells in %d points (strategy %q), want all 9", got, p.Cost.Points, p.Strategy)
	}
}

func TestStrategy_SynergyHalvesWhileFlatThenSteps(t *testing.T) {
	cfg := baseConfig(t, &fakeRunner{rate: trueRate})
	cfg.Strategy = StrategySynergy
	cfg.CPUs = []float64{1, 2, 3, 4}
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 4 (compared with itself: flat) → halve to 2; T(2) = 200 = T(4) → halve
	// to 1; T(1) = 100 is 50% off → step down by 1 GPU to 0: stop.
	// Memory is never measured.
	want := "[1/0 2/0 4/0]"
	if got := fmt.Sprint(measuredSet(p, "")); got != want {
		t.Fatalf("measured %s, want %s", got, want)
	}
	if len(p.Cells) != 4*3 {
		t.Errorf("the rest of the 4×3 grid is predicted: %d cells", len(p.Cells))
	}
}

func TestStrategy_OptimisticEndsKneesThenRefines(t *testing.T) {
	cfg := baseConfig(t, &fakeRunner{rate: trueRate})
	cfg.Strategy = StrategyOptimistic
	cfg.CPUs = []float64{1, 2, 3, 4, 6, 8}
	cfg.MemLimits = []int64{25 << 20, 50 << 20, 200 << 20, 1 << 30}
	cfg.Budget = 8
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := measuredSet(p, "")
	if len(got) > cfg.Budget {
		t.Fatalf("measured %d points, budget %d: %v", len(got), cfg.Budget, got)
	}
	// CPU ends 1 and 8; knee by bisection: mid of [1, 8] is index 2 (3
	// cores, at the plateau), then index 1 (2 cores): pinned. Memory ends at
	// 2 cores: 25MiB and 1GiB; knee between 25MiB (120) and 1GiB (200):
	// index 1 (50MiB, fetch-bound, below) then index 2 (200MiB): pinned.
	for _, must := range []string{"1/0", "8/0", "3/0", "2/0", "2/25", "2/1024", "2/50", "2/200"} {
		found := false
		for _, g := range got {
			found = found || g == must
		}
		if !found {
			t.Errorf("%s not measured; measured %v", must, got)
		}
	}
	// This job is exactly a bottleneck job, so every prediction holds.
	for _, c := range p.Cells {
		truth := trueRate(runner.Limits{CPUs: c.CPUs, MemLimitBytes: c.MemLimitBytes})
		if math.Abs(c.SamplesPerS-truth)/truth > 0.03 {
			t.Errorf("cell %g/%d: %.1f, truth %.1f", c.CPUs, c.MemLimitBytes>>20, c.SamplesPerS, truth)
		}
	}
}

func TestStrategy_ValidateMeasuresFarCellsApart(t *testing.T) {
	cfg := baseConfig(t, &fakeRunner{rate: trueRate})
	cfg.ValidateCells = 2
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// axes measured 1,2,3 × unlimited and 2 × {50MiB, 1GiB}: every other
	// cell is 1 step from a measured one. The first pick goes to fewer CPUs
	// and less memory (1/50MiB); the second to the cell farthest from it
	// (3/1GiB, 3 steps away).
	if got := fmt.Sprint(measuredSet(p, sensitivity.PhaseValidate)); got != "[1/50 3/1024]" {
		t.Fatalf("validation cells %s, want [1/50 3/1024]", got)
	}
	if p.Cost.Points != 7 {
		t.Errorf("points = %d, want 5 + 2 validation", p.Cost.Points)
	}
}

func TestKneeStep(t *testing.T) {
	vals := map[int]float64{0: 10, 5: 100}
	v := func(i int) (float64, bool) { x, ok := vals[i]; return x, ok }
	// knee somewhere in (0, 5]: bisect at 2
	if i, ok := kneeStep(6, 2, v); !ok || i != 2 {
		t.Fatalf("kneeStep = %d, %v; want 2", i, ok)
	}
	vals[2] = 99 // reaches 97%: knee in (0, 2] → 1
	if i, ok := kneeStep(6, 2, v); !ok || i != 1 {
		t.Fatalf("kneeStep = %d, %v; want 1", i, ok)
	}
	vals[1] = 50 // two interior steps spent: stop
	if _, ok := kneeStep(6, 2, v); ok {
		t.Fatal("kneeStep continued past its step budget")
	}
	flat := map[int]float64{0: 100, 5: 100}
	if _, ok := kneeStep(6, 2, func(i int) (float64, bool) { x, ok := flat[i]; return x, ok }); ok {
		t.Error("a flat axis has no knee to search")
	}
}
