package sim

import (
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// benchQueue is n active jobs from the multi-GPU generator (1/2/4/8 GPUs),
// split 20/70/10.
func benchQueue(b *testing.B, n int) []*scheduler.Active {
	g, err := NewGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: 1, MultiGPU: true, NumJobs: n})
	if err != nil {
		b.Fatal(err)
	}
	var q []*scheduler.Active
	for {
		j, ok := g.Next()
		if !ok {
			break
		}
		q = append(q, scheduler.NewActive(j, j.Speedup))
	}
	return q
}

// benchRound times one scheduling round: order the queue, then offer jobs
// to the strategy on an empty 512-GPU cluster (the philly preset) until no
// GPU is left.
func benchRound(b *testing.B, s scheduler.Strategy, p scheduler.Policy, n int) {
	c, _ := scheduler.Preset("philly")
	q := benchQueue(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	placed := 0
	for i := 0; i < b.N; i++ {
		r := scheduler.NewRound(&c)
		offer := p.Order(q, scheduler.OrderContext{NowSeconds: 1e6, FreeGPUs: r.FreeGPUs(), LargestFirst: true})
		placed = 0
		for _, a := range offer {
			if a.Job.GPUs > r.FreeGPUs() {
				continue
			}
			if s.Place(r, a.Job).Placed {
				placed++
			}
		}
	}
	b.ReportMetric(float64(placed), "placed")
}

// BenchmarkTuneRound2048Jobs512GPUs is one TUNE round at 2,048 active jobs
// on 512 GPUs (target: under 10 ms).
func BenchmarkTuneRound2048Jobs512GPUs(b *testing.B) {
	benchRound(b, scheduler.Tune{}, scheduler.FIFO{}, 2048)
}

// BenchmarkTuneRoundLAS2048Jobs512GPUs is the same round under LAS.
func BenchmarkTuneRoundLAS2048Jobs512GPUs(b *testing.B) {
	benchRound(b, scheduler.Tune{}, scheduler.LAS{}, 2048)
}

// BenchmarkFairRound2048Jobs512GPUs is the GPU-proportional round.
func BenchmarkFairRound2048Jobs512GPUs(b *testing.B) {
	benchRound(b, scheduler.Fair{}, scheduler.FIFO{}, 2048)
}

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
