package sim

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// anchorConfig is the paper's default point: 128 GPUs, round 300 s, window
// 4000–4999, first round at t=0 (the generator's path in the original).
func anchorConfig(t testing.TB, s scheduler.Strategy) Config {
	c, err := scheduler.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Cluster: &c, Strategy: s, Policy: scheduler.FIFO{}, RoundSeconds: DefaultRoundSeconds, Window: simcore.Steady, FirstRoundAtZero: true}
}

// anchorGenerator is the default point's workload: 9 jobs/h, split
// 20/70/10, single-GPU jobs.
func anchorGenerator(t testing.TB, seed uint64) *Generator {
	g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: seed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// anchorRun simulates the default point under FIFO for one seed.
func anchorRun(t testing.TB, s scheduler.Strategy, seed uint64) *simcore.Result {
	res, err := simulate(anchorConfig(t, s), anchorGenerator(t, seed))
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
// 21.88 h. The original's own generator, run end to end, does not give
// that figure on average either: over seeds 1–60 its FIFO+tune mean JCT
// averages 36.8 h (seeds 1–3: 25.7 h, 17% above 21.9 h); only 1 of 20
// three-seed blocks lands within ±15% of 21.9 h. The 21.88 h is one draw
// (seed 42 over a pickled job list whose durations were drawn once and
// whose blob is absent from the public mirror). TestAnchor_MatchesOriginal
// Generator checks the distribution instead. See docs/simulator.md.
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

// TestAnchor_MatchesOriginalGenerator compares our generator with the
// original's by what the anchor point makes of them, over many seeds (the
// two random streams cannot be matched draw for draw).
//
// The reference figures come from msr-fiddle/synergy's own generator in
// its default mode (Philly workload, exponential, single GPU, 9 jobs/h,
// split 20/70/10), seeds 1–60: its job lists were simulated by this
// package, which agrees with the original's runner to the last digit on
// such lists (seed 42 run end to end in Python: 18.282173 h both ways);
// docs/simulator.md has the per-seed table.
//
//	original generator, seeds 1–60: FIFO+tune mean 36.82 h (sd 12.67),
//	                                FIFO+fair mean 96.93 h (2.63× tune)
//
// Our seeds 1–20 must average within ±15% of each (the standard error of a
// 20-seed mean is about 2.8 h, 8%), and fair/tune within ±15% of 2.63.
// A unit slip in durations, a wrong iteration time or class split moves
// these far outside the band. 40 simulations (20–35 s): skipped with -short.
func TestAnchor_MatchesOriginalGenerator(t *testing.T) {
	if testing.Short() {
		t.Skip("20 seeds × fair and tune at the anchor point: skipped with -short")
	}
	const (
		origTune = 36.82 // h, mean over the original generator's seeds 1–60
		origFair = 96.93
		seeds    = 20
	)
	var points []simcore.Point
	for seed := uint64(1); seed <= seeds; seed++ {
		points = append(points, simcore.Point{Strategy: "tune", Policy: "fifo", JobsPerHour: 9, Seed: seed}, simcore.Point{Strategy: "fair", Policy: "fifo", JobsPerHour: 9, Seed: seed})
	}
	res, err := Sweep(context.Background(), anchorConfig(t, nil), points, runtime.GOMAXPROCS(0), func(p simcore.Point) (Source, error) {
		return NewCatalogGenerator(GeneratorConfig{JobsPerHour: p.JobsPerHour, Split: [3]float64{20, 70, 10}, Seed: p.Seed}, nil)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tune, fair float64
	for _, r := range res.Runs {
		if r.Result.JCT.N != 1000 {
			t.Fatalf("%+v: %d window jobs finished", r.Point, r.Result.JCT.N)
		}
		if r.Point.Strategy == "tune" {
			tune += r.Result.JCT.MeanHours / seeds
		} else {
			fair += r.Result.JCT.MeanHours / seeds
		}
	}
	t.Logf("seeds 1-%d: FIFO+tune %.2f h (original %.2f h), FIFO+fair %.2f h (original %.2f h), fair/tune %.2f (original %.2f)",
		seeds, tune, origTune, fair, origFair, fair/tune, origFair/origTune)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"FIFO+tune mean JCT", tune, origTune},
		{"FIFO+fair mean JCT", fair, origFair},
		{"fair/tune", fair / tune, origFair / origTune},
	} {
		if math.Abs(c.got-c.want)/c.want > 0.15 {
			t.Errorf("%s %.2f, the original generator's %.2f: more than 15%% apart", c.name, c.got, c.want)
		}
	}
}
