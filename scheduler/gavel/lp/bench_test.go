package lp

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"
)

// benchProblem is the policy-runtime study's setup (Gavel paper Fig. 12): n jobs on a cluster
// with n/4 GPUs of each of 3 types.
func benchProblem(n int) Problem {
	w := n / 4
	return randomProblem(rand.New(rand.NewSource(int64(n))), n, []int{w, w, w})
}

func benchPolicy(b *testing.B, policy string, n int) {
	p := benchProblem(n)
	opts := Options{Prices: []float64{3.06, 1.46, 0.9}}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Solve(policy, p, opts); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time of the process per solve: on a shared host the wall time (ns/op) also counts
	// the time other processes held the cores; the solver is single-threaded.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkMaxMinFairnessPerf_2048(b *testing.B)   { benchPolicy(b, MaxMinFairnessPerf, 2048) }
func BenchmarkMaxMinFairnessPerf_1024(b *testing.B)   { benchPolicy(b, MaxMinFairnessPerf, 1024) }
func BenchmarkMaxMinFairness_2048(b *testing.B)       { benchPolicy(b, MaxMinFairness, 2048) }
func BenchmarkMinTotalDurationPerf_1024(b *testing.B) { benchPolicy(b, MinTotalDurationPerf, 1024) }
func BenchmarkMinTotalDurationPerf_2048(b *testing.B) { benchPolicy(b, MinTotalDurationPerf, 2048) }
func BenchmarkFinishTimeFairnessPerf_1024(b *testing.B) {
	benchPolicy(b, FinishTimeFairnessPerf, 1024)
}

// FTF with every job just arrived (no history): the lower end of the ρ bracket is then not
// tight, so the bisection needs tens of LPs (the random problem above closes in one probe).
func BenchmarkFinishTimeFairnessPerf_1024_fresh(b *testing.B) {
	p := benchProblem(1024)
	for m := range p.Jobs {
		p.Jobs[m].TimeSinceStart, p.Jobs[m].CumulativeIsolatedTime = 0, 0
	}
	sol, err := solveDetail(FinishTimeFairnessPerf, p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Solve(FinishTimeFairnessPerf, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(sol.LPSolves), "LPs/op")
}

func BenchmarkMaxSumThroughputPerf_2048(b *testing.B) { benchPolicy(b, MaxSumThroughputPerf, 2048) }

// The floor the issue names: gonum's dense simplex on the same max-min LP (reference_test.go
// builds it). Its dense tableau grows as (jobs·types)², so only small sizes are run.
func benchGonum(b *testing.B, n int) {
	p := benchProblem(n)
	coef := maxMinCoef(p, false)
	sf, w := scaleFactors(p), floats(p.Workers)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		refMaxMin(b, coef, sf, w)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

func BenchmarkGonumSimplexMaxMinPerf_64(b *testing.B)  { benchGonum(b, 64) }
func BenchmarkGonumSimplexMaxMinPerf_128(b *testing.B) { benchGonum(b, 128) }
func BenchmarkMaxMinFairnessPerf_128(b *testing.B)     { benchPolicy(b, MaxMinFairnessPerf, 128) }

// The packed policies where no two jobs are interchangeable (every job its own class: what
// finish_time_fairness_packed and min_total_duration_packed always see, since remaining steps
// differ): the class LP is then Gavel's pair-variable LP, 2n + 3 rows and (n + n²/2)·3 columns.
func BenchmarkPackedDistinctJobs(b *testing.B) {
	for _, policy := range PackedPolicies() {
		for _, n := range []int{64, 128} {
			b.Run(fmt.Sprintf("%s/jobs=%d", policy, n), func(b *testing.B) {
				w := n / 4
				p := randomPackedProblem(rand.New(rand.NewSource(int64(n))), n, n, []int{w, w, w})
				for m := range p.Jobs { // no two jobs alike
					p.Jobs[m].Throughput[0] *= 1 + 1e-6*float64(m)
					p.Jobs[m].RemainingSteps *= 1 + 1e-3*float64(m)
				}
				var sol PackedSolution
				var err error
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if sol, err = SolvePacked(policy, p, Options{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(sol.LPSolves), "LPs/op")
				b.ReportMetric(float64(sol.Classes), "classes")
			})
		}
	}
}

// The SLO cost variant with every job under a loose SLO (20× its remaining time on a V100), so
// that the SLOs can be met and both of its LPs run (feasibility, then the cost LP with SLO rows).
func BenchmarkCostSLOs_1024(b *testing.B) {
	p := benchProblem(1024)
	for m := range p.Jobs {
		jb := &p.Jobs[m]
		jb.HasSLO, jb.SLOTimeLeftS = true, 20*jb.RemainingSteps/jb.Throughput[0]
	}
	opts := Options{Prices: []float64{3.06, 1.46, 0.9}}
	sol, err := solveDetail(MaxSumThroughputPerCostPerfSLOs, p, opts)
	if err != nil || sol.SLOsDropped {
		b.Fatalf("SLOs dropped %v, err %v: the benchmark should solve with them", sol.SLOsDropped, err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Solve(MaxSumThroughputPerCostPerfSLOs, p, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
