package sim

import (
	"math"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// anchorRun simulates the paper's default point: 128 GPUs, 9 jobs/h,
// split 20/70/10, single-GPU jobs, window 4000–4999, FIFO.
func anchorRun(t testing.TB, s scheduler.Strategy, seed uint64) *Result {
	g, err := NewGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := scheduler.Preset("default")
	res, err := Run(Config{Cluster: &c, Strategy: s, Policy: scheduler.FIFO{}, RoundSeconds: DefaultRoundSeconds, Window: Window{4000, 4999}, FirstRoundAtZero: true}, g)
	if err != nil {
		t.Fatal(err)
	}
	if res.JCT.N != 1000 {
		t.Fatalf("%d window jobs finished", res.JCT.N)
	}
	return res
}

// TestAnchor_DefaultPoint runs the default point over seeds 1–3.
//
// What it asserts: FIFO+fair is at least 2.5× worse than FIFO+tune on
// average (the paper's headline at this load), and seed 1's FIFO+tune mean
// JCT equals what the Python original computes when it replays the same
// job list (37.9206 h, recorded with --record-trace and replayed with
// Synergy's runner; docs/simulator.md), which pins the semantics end to
// end on a loaded cluster.
//
// What it reports but does not assert: the distance from the artifact's
// 21.88 h. That figure is one realisation (seed 42 over the pickled Philly
// job list the repository no longer carries); near saturation the mean JCT
// swings widely with the draw (16.9–48 h over seeds 1–12 here), and seeds
// 1–3 average about 37 h. See docs/simulator.md.
func TestAnchor_DefaultPoint(t *testing.T) {
	var tune, fair float64
	for seed := uint64(1); seed <= 3; seed++ {
		rt := anchorRun(t, scheduler.Tune{}, seed)
		rf := anchorRun(t, scheduler.Fair{}, seed)
		t.Logf("seed %d: FIFO+tune %.2f h (p99 %.1f), FIFO+fair %.2f h", seed, rt.JCT.MeanHours, rt.JCT.P99Hours, rf.JCT.MeanHours)
		if seed == 1 {
			const python = 37.92058833333333 // drive of the original, same list
			if math.Abs(rt.JCT.MeanHours-python)/python > 1e-6 {
				t.Errorf("seed 1 FIFO+tune %.6f h, the original gives %.6f h on the same jobs", rt.JCT.MeanHours, python)
			}
		}
		tune += rt.JCT.MeanHours / 3
		fair += rf.JCT.MeanHours / 3
	}
	t.Logf("mean over seeds 1-3: FIFO+tune %.2f h (artifact 21.88 h, %+.0f%%), FIFO+fair %.2f h (%.2f× tune)", tune, 100*(tune-21.88)/21.88, fair, fair/tune)
	if fair < 2.5*tune {
		t.Errorf("FIFO+fair %.2f h is not 2.5× FIFO+tune %.2f h", fair, tune)
	}
}
