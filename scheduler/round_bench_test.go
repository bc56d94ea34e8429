package scheduler_test

import (
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
)

// benchRound times one scheduling round: order n active jobs from the
// multi-GPU generator (1/2/4/8 GPUs, split 20/70/10, seed 1), then offer
// them to the strategy on an empty 512-GPU cluster (the philly preset)
// until no GPU is left.
func benchRound(b *testing.B, s scheduler.Strategy, p scheduler.Policy, n int) {
	c, _ := scheduler.Preset("philly")
	var q []*scheduler.Active
	for _, j := range genJobs(b, n, true, 1) {
		q = append(q, scheduler.NewActive(j, j.Speedup))
	}
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

// benchBatchRound times one round of a strategy over n offered jobs on the
// 512-GPU philly preset, through scheduler.Schedule (PlaceAll for OPT).
func benchBatchRound(b *testing.B, s scheduler.Strategy, n int) {
	c, _ := scheduler.Preset("philly")
	jobs := genJobs(b, n, true, 1)
	b.ReportAllocs()
	b.ResetTimer()
	placed := 0
	for i := 0; i < b.N; i++ {
		r := scheduler.NewRound(&c)
		placed = 0
		for _, d := range scheduler.Schedule(r, s, jobs) {
			if d.Placed {
				placed++
			}
		}
	}
	b.ReportMetric(float64(placed), "placed")
}

// BenchmarkOptRound2048Jobs512GPUs is one Synergy-OPT round (LP plus
// placement) at 2,048 active jobs on 512 GPUs (target: under 1 s).
func BenchmarkOptRound2048Jobs512GPUs(b *testing.B) {
	benchBatchRound(b, scheduler.Opt{}, 2048)
}

// BenchmarkOptLP2048Jobs512GPUs is the LP alone (SolveOpt).
func BenchmarkOptLP2048Jobs512GPUs(b *testing.B) {
	c, _ := scheduler.Preset("philly")
	jobs := genJobs(b, 2048, true, 1)
	b.ReportAllocs()
	b.ResetTimer()
	var plan *scheduler.OptPlan
	for i := 0; i < b.N; i++ {
		var err error
		if plan, err = scheduler.SolveOpt(scheduler.NewRound(&c), jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(plan.Variables), "lp-vars")
	b.ReportMetric(float64(len(plan.Targets)), "admitted")
}
