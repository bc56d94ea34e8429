package gavel

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssign_OptimalAgainstBruteForce: on random rectangular matrices
// (with ties, from small integers) the assignment's cost equals the least
// over every injective map of rows to columns, and no column is used twice.
func TestAssign_OptimalAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		nr := 1 + rng.IntN(4)
		nc := nr + rng.IntN(3)
		c := make([][]float64, nr)
		for i := range c {
			c[i] = make([]float64, nc)
			for j := range c[i] {
				c[i][j] = float64(rng.IntN(6))
			}
		}
		got := assign(nr, nc, func(i, j int) float64 { return c[i][j] })
		used, sum := map[int]bool{}, 0.0
		for i, j := range got {
			if j < 0 || j >= nc || used[j] {
				t.Fatalf("trial %d: row %d got column %d (used: %v)", trial, i, j, used)
			}
			used[j] = true
			sum += c[i][j]
		}
		if best := bruteAssign(c, 0, map[int]bool{}); sum != best {
			t.Fatalf("trial %d: cost %v, optimum %v (matrix %v, assignment %v)", trial, sum, best, c, got)
		}
	}
}

func bruteAssign(c [][]float64, i int, used map[int]bool) float64 {
	if i == len(c) {
		return 0
	}
	best := math.Inf(1)
	for j := range c[i] {
		if used[j] {
			continue
		}
		used[j] = true
		best = math.Min(best, c[i][j]+bruteAssign(c, i+1, used))
		used[j] = false
	}
	return best
}

// TestAllox_ShortestFirstAndHeldWorkersKept: one type with one worker and
// two waiting jobs of 100 s and 10 s: the 10 s job gets the worker (the
// order minimising the sum of completion times). Next allocation, with a
// third job that would be shorter still, the holder keeps its worker (AlloX
// does not preempt); with a second worker free, the third job gets it.
func TestAllox_ShortestFirstAndHeldWorkersKept(t *testing.T) {
	p := &alloxPolicy{alpha: 1}
	st := &State{Types: []string{"v100"}, Workers: []int{1}, Jobs: []StateJob{
		{ID: 0, Throughput: []float64{1}, ScaleFactor: 1, RemainingSteps: 100},
		{ID: 1, Throughput: []float64{1}, ScaleFactor: 1, RemainingSteps: 10},
	}}
	a, err := p.Allocate(st)
	if err != nil {
		t.Fatal(err)
	}
	if a[0][0] != 0 || a[1][0] != 1 {
		t.Fatalf("allocation %v: want the 10 s job on the worker", a)
	}
	st.Jobs = append(st.Jobs, StateJob{ID: 2, Throughput: []float64{1}, ScaleFactor: 1, RemainingSteps: 1})
	if a, err = p.Allocate(st); err != nil || a[1][0] != 1 || a[2][0] != 0 || a[0][0] != 0 {
		t.Fatalf("allocation %v (%v): want job 1 to keep the only worker", a, err)
	}
	st.Workers = []int{2}
	if a, err = p.Allocate(st); err != nil || a[1][0] != 1 || a[2][0] != 1 || a[0][0] != 0 {
		t.Fatalf("allocation %v (%v): want jobs 1 and 2 on the two workers", a, err)
	}
}

// TestAllox_FastTypeToTheJobItHelps: two types with one worker each; job 0
// runs 10× faster on v100, job 1 equally fast on both: job 0 gets the v100.
func TestAllox_FastTypeToTheJobItHelps(t *testing.T) {
	p := &alloxPolicy{alpha: 1}
	st := &State{Types: []string{"k80", "v100"}, Workers: []int{1, 1}, Jobs: []StateJob{
		{ID: 0, Throughput: []float64{1, 10}, ScaleFactor: 1, RemainingSteps: 1000},
		{ID: 1, Throughput: []float64{2, 2}, ScaleFactor: 1, RemainingSteps: 1000},
	}}
	a, err := p.Allocate(st)
	if err != nil {
		t.Fatal(err)
	}
	if a[0][1] != 1 || a[1][0] != 1 {
		t.Fatalf("allocation %v: want job 0 on v100 and job 1 on k80", a)
	}
}

func TestAllox_RefusesMultiGPUJobs(t *testing.T) {
	p := &alloxPolicy{alpha: 1}
	_, err := p.Allocate(&State{Types: []string{"v100"}, Workers: []int{4}, Jobs: []StateJob{{ID: 3, Throughput: []float64{1}, ScaleFactor: 2, RemainingSteps: 5}}})
	if err == nil || !strings.Contains(err.Error(), "job 3 has scale factor 2") {
		t.Fatalf("error %v", err)
	}
}

// TestAllox_RunsGavelsMechanism: a continuous single-GPU Gavel workload on
// 8:16:24 under allox with the invariants checked every round (no type over
// capacity, no worker twice): every job finishes, and allox's mean JCT is no
// worse than fifo_perf's (AlloX minimises the sum of completion times).
func TestAllox_RunsGavelsMechanism(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ParseClusterSpec("8:16:24", "")
	mean := map[string]float64{}
	for _, name := range []string{"allox", "fifo_perf"} {
		g, err := NewGenerator(GeneratorConfig{Seed: 1, MeanInterarrivalS: 3600 / 4.0, NumJobs: 300}, tp)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := NewPolicy(name, 1, false)
		res, err := Run(context.Background(), Config{Cluster: spec, Check: true}, tp, Workload{Generator: g}, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.NumFinished != 300 {
			t.Fatalf("%s: %d/300 finished", name, res.NumFinished)
		}
		mean[name] = res.MeanJCTS
	}
	if mean["allox"] > mean["fifo_perf"] {
		t.Fatalf("allox mean JCT %.0f s above fifo_perf's %.0f s", mean["allox"], mean["fifo_perf"])
	}
	t.Logf("mean JCT: allox %.2f h, fifo_perf %.2f h", mean["allox"]/3600, mean["fifo_perf"]/3600)
}
