package scheduler_test

import (
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/sim"
)

// roundJobs is n jobs from Synergy's multi-GPU generator (1/2/4/8 GPUs,
// split 20/70/10, seed 1), each with its zoo matrix.
func roundJobs(b *testing.B, n int) []*scheduler.Job {
	g, err := sim.NewGenerator(sim.GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: 1, MultiGPU: true, NumJobs: n})
	if err != nil {
		b.Fatal(err)
	}
	var jobs []*scheduler.Job
	for {
		j, ok := g.Next()
		if !ok {
			return jobs
		}
		jobs = append(jobs, j)
	}
}

// benchBatchRound times one round of a strategy over n offered jobs on the
// 512-GPU philly preset, through scheduler.Schedule (PlaceAll for OPT).
func benchBatchRound(b *testing.B, s scheduler.Strategy, n int) {
	c, _ := scheduler.Preset("philly")
	jobs := roundJobs(b, n)
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
	jobs := roundJobs(b, 2048)
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
