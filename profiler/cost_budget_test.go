package profiler

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// budgetCells: one measured warm point (1 s start-up, 200 samples) and one
// measured cold point (60 s first pass, 200 samples); two predicted cells:
// a warm one at 100/s ± 20 (20%) and a cold one at 50/s ± 25 (50%).
func budgetCells() []sensitivity.Cell {
	warm := &sensitivity.PointStats{WallSeconds: 3, WarmupSeconds: 1, MeasureSeconds: 2}
	cold := &sensitivity.PointStats{WallSeconds: 64, WarmupSeconds: 60, MeasureSeconds: 4}
	return []sensitivity.Cell{
		{CPUs: 1, MemLimitBytes: 0, Measured: true, SamplesPerS: 100, Stats: warm},
		{CPUs: 1, MemLimitBytes: 64 << 20, Measured: true, SamplesPerS: 50, Stats: cold},
		{CPUs: 2, MemLimitBytes: 0, SamplesPerS: 100, SamplesPerSCI95: 20},
		{CPUs: 2, MemLimitBytes: 64 << 20, SamplesPerS: 50, SamplesPerSCI95: 25},
		{CPUs: 3, MemLimitBytes: 0, SamplesPerS: 200, SamplesPerSCI95: 4}, // 2%: sure enough
	}
}

func TestPickUncertain_PerSecondUnderATimeBudget(t *testing.T) {
	cells := budgetCells()
	pc := newPointCost(cells)
	// Estimates: warm 1 + 200/100 = 3 s; cold 60 + 200/50 = 64 s.
	if s, ok := pc.seconds(0, 100); !ok || s != 3 {
		t.Fatalf("warm estimate %g, %v; want 3 s", s, ok)
	}
	if s, ok := pc.seconds(64<<20, 50); !ok || s != 64 {
		t.Fatalf("cold estimate %g, %v; want 64 s", s, ok)
	}
	cases := []struct {
		name        string
		left        float64 // -1: no time budget
		wantCPUs    float64 // 0: none
		wantSkipped bool
	}{
		// No budget: the widest interval, 25 samples/s (the cold cell).
		{"no budget", -1, 2, false},
		// Budget: 0.2 / 3 s = 0.067 per s beats 0.5 / 64 s = 0.0078.
		{"plenty of time", 1000, 2, false},
		// 10 s left: the cold cell (64 s) does not fit; the warm one does.
		{"cold does not fit", 10, 2, true},
		// 2 s left: neither fits.
		{"nothing fits", 2, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pick, skipped := pickUncertain(cells, pc, tc.left)
			if tc.wantCPUs == 0 {
				if pick != nil {
					t.Fatalf("picked %g/%d, want none", pick.CPUs, pick.MemLimitBytes)
				}
			} else if pick == nil || pick.CPUs != tc.wantCPUs {
				t.Fatalf("picked %+v, want a cell at %g CPUs", pick, tc.wantCPUs)
			}
			if skipped != tc.wantSkipped {
				t.Errorf("skipped = %v, want %v", skipped, tc.wantSkipped)
			}
		})
	}
	// Which cell: without a budget the cold one, with one the warm one.
	if p, _ := pickUncertain(cells, pc, -1); p.MemLimitBytes == 0 {
		t.Error("without a budget the wider interval (the cold cell) goes first")
	}
	if p, _ := pickUncertain(cells, pc, 1000); p.MemLimitBytes != 0 {
		t.Error("under a budget the warm cell (more certainty per second) goes first")
	}
}

func TestPointCost_NoMeasuredPointNoEstimate(t *testing.T) {
	pc := newPointCost(nil)
	if _, ok := pc.seconds(0, 100); ok {
		t.Fatal("an estimate with no measured point")
	}
	// With no estimate, a budgeted pick falls back to the interval.
	cells := budgetCells()[2:]
	if p, skipped := pickUncertain(cells, pc, 5); p == nil || p.MemLimitBytes == 0 || skipped {
		t.Fatalf("picked %+v (skipped %v), want the widest interval", p, skipped)
	}
}

// Under a time budget and no point cap the optimistic strategy goes past
// DefaultBudget while predictions stay uncertain, and ends either with
// every prediction within refineRelCI or with the time spent.
func TestRun_TimeBudgetLiftsThePointCap(t *testing.T) {
	// A CPU curve that bends all along the axis and a fetch-bound rate at
	// every limit: a fit of 10 points leaves cells uncertain.
	rate := func(l runner.Limits) float64 {
		r := 100 * math.Sqrt(l.CPUs)
		if m := float64(l.MemLimitBytes >> 20); m > 0 {
			r = math.Min(r, 60+m/4)
		}
		return r
	}
	fr := &fakeRunner{rate: rate}
	cfg := baseConfig(t, fr)
	cfg.Strategy = StrategyOptimistic
	cfg.CPUs = []float64{0.5, 1, 1.5, 2, 3, 4, 6, 8}
	cfg.MemLimits = []int64{25 << 20, 50 << 20, 100 << 20, 200 << 20, 400 << 20}
	cfg.TimeBudget = time.Hour
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.StopReason != sensitivity.SweepStopComplete {
		t.Fatalf("stop reason %q: an hour is plenty", p.Cost.StopReason)
	}
	uncertain := 0
	for _, c := range p.Cells {
		if !c.Measured && c.SamplesPerS > 0 && c.SamplesPerSCI95/c.SamplesPerS > refineRelCI {
			uncertain++
		}
	}
	if uncertain > 0 {
		t.Errorf("the sweep ended with %d uncertain predictions and time left (%d points)", uncertain, p.Cost.Points)
	}
	// Most runs need 11 points here (a capped sweep would stop at 10 with
	// predictions still uncertain, failing the check above); the timing
	// noise of the fake job's clock lets a few runs settle sooner.
	t.Logf("%d points", p.Cost.Points)
	id := p.Identity
	if id == nil || id.Grid.Budget != NoPointCap {
		t.Errorf("identity %+v: want no point cap under a time budget", id)
	}
}
