package sim

import (
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// BenchmarkAnchorPointTune is the whole default point (9 jobs/h, window
// 4000–4999) under FIFO+tune, seed 1.
func BenchmarkAnchorPointTune(b *testing.B) {
	for i := 0; i < b.N; i++ {
		anchorRun(b, scheduler.Tune{}, 1)
	}
}

// BenchmarkAnchorPointFair is the same under FIFO+fair.
func BenchmarkAnchorPointFair(b *testing.B) {
	for i := 0; i < b.N; i++ {
		anchorRun(b, scheduler.Fair{}, 1)
	}
}

// BenchmarkTenThousandGPUs is bench-sim.sh's 10k point: 1,250 servers × 8
// GPUs (Synergy's default server), 700 jobs/h, window 50000–60000, FIFO+tune,
// seed 1 (about 25 million placements; `-benchtime 1x` with -cpuprofile or
// -memprofile to see where a run goes).
func BenchmarkTenThousandGPUs(b *testing.B) {
	c := scheduler.Homogeneous("bench-1250", 1250, 8, 24, 500e9)
	for i := 0; i < b.N; i++ {
		g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 700, Split: [3]float64{20, 70, 10}, Seed: 1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{Cluster: &c, Strategy: scheduler.Tune{}, Policy: scheduler.FIFO{}, RoundSeconds: DefaultRoundSeconds,
			Window: simcore.Window{First: 50000, Last: 60000}, FirstRoundAtZero: true}
		res, err := simulate(cfg, g)
		if err != nil {
			b.Fatal(err)
		}
		if res.JCT.N != 10001 {
			b.Fatalf("%d window jobs finished, want 10001", res.JCT.N)
		}
	}
}
