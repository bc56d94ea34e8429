package main

import (
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// matrix show --gpu puts each measured cell's GPU utilisation beside its
// throughput, marks a launch-wide figure, and shows none for cells
// without GPU samples.
func TestPrintGPUGrid(t *testing.T) {
	p := sensitivitytest.Demo(t.TempDir())
	var withGPU, launch, bare *sensitivity.Cell
	for i := range p.Cells {
		c := &p.Cells[i]
		if !c.Measured || c.Stats == nil || c.Failure != nil {
			continue
		}
		switch {
		case withGPU == nil:
			withGPU = c
			c.Stats.GPUUtilPctMean, c.Stats.GPUJobSMUtilPctMean, c.Stats.GPUStatsOver = 55.7, 26.9, sensitivity.GPUStatsMeasured
		case launch == nil:
			launch = c
			c.Stats.GPUUtilPctMean, c.Stats.GPUStatsOver = 8.7, sensitivity.GPUStatsLaunch
		case bare == nil:
			bare = c
		}
	}
	if bare == nil {
		t.Fatal("the demo profile has fewer than three measured cells")
	}
	var b strings.Builder
	if err := printGPUGrid(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"@ 55.7% (SM 26.9%)", "@ 8.7%*", "launch-wide where marked *", "GPU utilisation over the measured iterations",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--gpu grid lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " @ ") - 1; n != 2 { // the caption has one
		t.Errorf("--gpu grid shows %d cells with GPU figures, want the 2 that have them:\n%s", n, out)
	}
}
