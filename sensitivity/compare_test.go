package sensitivity

import (
	"math"
	"testing"
)

func TestCompare_ScoresOnlyCellsAPredicted(t *testing.T) {
	tr := audioLike
	cpus := []float64{0.25, 0.5, 1}
	mems := []int64{64 * mib, 128 * mib, 160 * mib, 208 * mib, 0}
	var all [][2]float64
	for _, c := range cpus {
		for _, m := range mems {
			all = append(all, [2]float64{c, float64(m)})
		}
	}
	ref := profileOf(tr, cpus, mems, all) // the ground-truth grid
	few := profileOf(tr, cpus, mems, [][2]float64{{0.25, 0}, {0.5, 0}, {1, 0}, {1, 64 * mib}, {1, 128 * mib}, {1, 208 * mib}})
	if err := Fill(few); err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(few, ref)
	if err != nil {
		t.Fatal(err)
	}
	// 15 cells, 6 measured by few: 9 scored
	if len(cmp.Cells) != 15 || cmp.Scored != 9 {
		t.Fatalf("cells %d scored %d, want 15 and 9", len(cmp.Cells), cmp.Scored)
	}
	// The truth is in the model's family: within 2% everywhere; the
	// MinIO formula (linear hit fraction) misses the LRU-like memory
	// columns by far more.
	if cmp.MAPEPct > 2 || cmp.WorstErrPct > 2 {
		t.Errorf("MAPE %.2f%%, worst %.2f%% at (%v, %d): want <= 2%%", cmp.MAPEPct, cmp.WorstErrPct, cmp.WorstCPUs, cmp.WorstMemBytes)
	}
	if cmp.BaselineCells != 9 || cmp.BaselineMAPEPct < 10 {
		t.Errorf("baseline over %d cells: %.2f%%, want 9 cells, >= 10%%", cmp.BaselineCells, cmp.BaselineMAPEPct)
	}
	for _, d := range cmp.Cells {
		if d.AMeasured && math.Abs(d.DiffPct) > 1e-9 {
			t.Errorf("a cell both measured identically differs: %+v", d)
		}
	}
	// the 6 cells both measured agree exactly
	if cmp.BothMeasured != 6 || cmp.RepeatMAPEPct != 0 {
		t.Errorf("both measured %d, repeat MAPE %v; want 6 and 0", cmp.BothMeasured, cmp.RepeatMAPEPct)
	}
	// against itself: zero error, nothing scored
	self, _ := Compare(ref, ref)
	if self.Scored != 0 || self.AllMAPEPct != 0 {
		t.Errorf("grid vs itself: %+v", self)
	}
	other := profileOf(tr, []float64{3}, []int64{0}, [][2]float64{{3, 0}})
	if _, err := Compare(other, ref); err == nil {
		t.Error("profiles with no common cell compared")
	}
}
