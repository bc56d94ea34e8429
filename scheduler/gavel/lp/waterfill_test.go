package lp

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// refWaterFill is Gavel's water-filling loop written independently on gonum's simplex, with
// the bottlenecks found exactly by one LP per unfrozen job (maximise its level with every other
// job held at its level) instead of the package's dual test. It returns each job's level.
func refWaterFill(t *testing.T, p Problem, h *Hierarchy, agnostic bool) []float64 {
	n, k := len(p.Jobs), len(p.Types)
	tp := make([][]float64, n)
	for m, jb := range p.Jobs {
		tp[m] = append([]float64(nil), jb.Throughput...)
		if agnostic {
			for j := range tp[m] {
				tp[m][j] = 1
			}
		}
	}
	total := 0.0
	for _, w := range p.Workers {
		total += float64(w)
	}
	coef := make([][]float64, n)
	for m := range coef {
		prop := 0.0
		for j := 0; j < k; j++ {
			prop += tp[m][j] * float64(p.Workers[j]) / total
		}
		coef[m] = make([]float64, k)
		for j := 0; j < k; j++ {
			coef[m][j] = tp[m][j] * float64(p.Jobs[m].ScaleFactor) / prop
		}
	}
	sf := make([]float64, n)
	for m, jb := range p.Jobs {
		sf[m] = float64(jb.ScaleFactor)
	}
	workers := make([]float64, k)
	for j, w := range p.Workers {
		workers[j] = float64(w)
	}
	frozen := make([]bool, n)
	lower := make([]float64, n)
	// levelRows adds Level_m - wt_m·v_t >= lower_m rows.
	levelRows := func(r *refLP, wt []float64, tcol int) {
		for m := 0; m < n; m++ {
			row := make([]float64, len(r.obj))
			for j := 0; j < k; j++ {
				row[m*k+j] = -coef[m][j]
			}
			if tcol >= 0 {
				row[tcol] = wt[m]
			}
			r.rows, r.rhs = append(r.rows, row), append(r.rhs, -lower[m]*(1-1e-7))
		}
	}
	for step := 0; step < 4*n+4; step++ {
		wt := refWeights(p, h, frozen)
		anyW := false
		for _, v := range wt {
			anyW = anyW || v > 0
		}
		if !anyW {
			return lower
		}
		r := refBase(n, k, 1, sf, workers)
		r.obj[n*k] = 1
		levelRows(&r, wt, n*k)
		tStar, _ := r.solve(t)
		for m := range lower {
			if !frozen[m] && wt[m] > 0 {
				lower[m] = lower[m]*(1-1e-7) + wt[m]*tStar
			}
		}
		for m := range lower {
			if frozen[m] || wt[m] == 0 {
				continue
			}
			q := refBase(n, k, 0, sf, workers)
			for j := 0; j < k; j++ {
				q.obj[m*k+j] = coef[m][j]
			}
			levelRows(&q, nil, -1)
			best, _ := q.solve(t)
			if best <= lower[m]+1e-6*math.Max(lower[m], 1e-3) {
				frozen[m] = true
			}
		}
	}
	t.Fatalf("reference water filling did not end: frozen %v lower %v", frozen, lower)
	return nil
}

// refWeights is Gavel's _compute_priority_weights, written out.
func refWeights(p Problem, h *Hierarchy, frozen []bool) []float64 {
	wt := make([]float64, len(p.Jobs))
	if h == nil {
		for m, jb := range p.Jobs {
			if !frozen[m] {
				wt[m] = jb.PriorityWeight
			}
		}
		return wt
	}
	for e, en := range h.Entities {
		sum, head := 0.0, -1
		for m, jb := range p.Jobs {
			if h.JobEntity[m] == e && !frozen[m] {
				sum += jb.PriorityWeight
				if head < 0 || jb.ID < p.Jobs[head].ID {
					head = m
				}
			}
		}
		for m, jb := range p.Jobs {
			if h.JobEntity[m] != e || frozen[m] {
				continue
			}
			if !en.FIFO {
				wt[m] = en.Weight * jb.PriorityWeight / sum
			} else if m == head {
				wt[m] = en.Weight
			}
		}
	}
	return wt
}

func randomHierarchy(rng *rand.Rand, n int, mode string) *Hierarchy {
	ne := 1 + rng.Intn(4)
	h := &Hierarchy{JobEntity: make([]int, n)}
	for e := 0; e < ne; e++ {
		fifo := mode == "fifo" || (mode == "mixed" && rng.Intn(2) == 0)
		h.Entities = append(h.Entities, Entity{Weight: float64(1 + rng.Intn(3)), FIFO: fifo})
	}
	for m := range h.JobEntity {
		h.JobEntity[m] = rng.Intn(ne)
	}
	return h
}

func TestWaterFilling_MatchesExactReference(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	clusters := [][]int{{1, 1, 1}, {2, 3, 4}, {4, 0, 2}, {3, 3, 3}, {8, 8, 8}}
	cases := 0
	for _, mode := range []string{"none", "fairness", "fifo", "mixed"} {
		for trial := 0; trial < 10; trial++ {
			n := 2 + rng.Intn(14)
			p := randomProblem(rng, n, clusters[trial%len(clusters)])
			var h *Hierarchy
			if mode != "none" {
				h = randomHierarchy(rng, n, mode)
			}
			for _, pol := range []string{MaxMinFairnessWaterFillingPerf, MaxMinFairnessWaterFilling} {
				sol, err := SolveWaterFilling(pol, p, h, Options{})
				if err != nil {
					t.Fatalf("%s %s trial %d: %v", mode, pol, trial, err)
				}
				checkInvariants(t, p, sol.X)
				want := refWaterFill(t, p, h, pol == MaxMinFairnessWaterFilling)
				for m := range want {
					if math.Abs(sol.Level[m]-want[m]) > 2e-5*math.Max(1, want[m]) {
						t.Errorf("%s %s trial %d (n=%d, workers %v): job %d level %.9g, exact reference %.9g",
							mode, pol, trial, n, p.Workers, m, sol.Level[m], want[m])
					}
				}
				cases++
			}
		}
	}
	t.Logf("%d instances agree with the exact reference", cases)
}

// Two entities weighted 1:2 with identical jobs on one type: the level (GPU share) splits 1:2,
// and inside a fairness entity equally: 6 GPUs, A has 2 jobs, B has 3 → A's jobs 1 GPU each
// (2 of 6 = 1/3), B's jobs 4/3 each (4 of 6 = 2/3).
func TestWaterFilling_EntityWeightsSplitCapacity(t *testing.T) {
	p := Problem{Types: []string{"v100"}, Workers: []int{6}}
	for m := 0; m < 5; m++ {
		p.Jobs = append(p.Jobs, Job{ID: m, Throughput: []float64{2}, ScaleFactor: 2, PriorityWeight: 1})
	}
	h := &Hierarchy{Entities: []Entity{{Weight: 1}, {Weight: 2}}, JobEntity: []int{0, 0, 1, 1, 1}}
	sol, err := SolveWaterFilling(MaxMinFairnessWaterFillingPerf, p, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// GPUs per job = sf·X: A 1 GPU each → X = 0.5; B 4/3 GPUs → X = 2/3.
	want := []float64{0.5, 0.5, 2.0 / 3, 2.0 / 3, 2.0 / 3}
	for m, w := range want {
		if math.Abs(sol.X[m][0]-w) > 1e-7 {
			t.Errorf("job %d: X = %.9f, want %.9f", m, sol.X[m][0], w)
		}
	}
}

// FIFO inside an entity: its oldest job is raised first until it saturates (row sum 1), then
// the next. 1 type with 3 GPUs; entity A (fifo, weight 1) has jobs 0, 1, 2; entity B (weight 1)
// has job 3. A's head (job 0) and job 3 rise together to 1 GPU each (their rows saturate);
// then job 1 alone takes the last GPU; job 2 gets nothing.
func TestWaterFilling_FIFOEntityServesOldestFirst(t *testing.T) {
	p := Problem{Types: []string{"v100"}, Workers: []int{3}}
	for m := 0; m < 4; m++ {
		p.Jobs = append(p.Jobs, Job{ID: m, Throughput: []float64{1}, ScaleFactor: 1, PriorityWeight: 1})
	}
	h := &Hierarchy{Entities: []Entity{{Weight: 1, FIFO: true}, {Weight: 1}}, JobEntity: []int{0, 0, 0, 1}}
	sol, err := SolveWaterFilling(MaxMinFairnessWaterFillingPerf, p, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 0, 1}
	for m, w := range want {
		if math.Abs(sol.X[m][0]-w) > 1e-6 {
			t.Errorf("job %d: X = %.9f, want %v", m, sol.X[m][0], w)
		}
	}
}

func TestWaterFilling_BadInput(t *testing.T) {
	p := Problem{Types: []string{"v100"}, Workers: []int{1},
		Jobs: []Job{{ID: 7, Throughput: []float64{1}, ScaleFactor: 1, PriorityWeight: 1}}}
	for name, h := range map[string]*Hierarchy{
		"entity 0: weight 0":        {Entities: []Entity{{Weight: 0}}, JobEntity: []int{0}},
		"job 7: entity 3":           {Entities: []Entity{{Weight: 1}}, JobEntity: []int{3}},
		"hierarchy has 0 job entit": {Entities: []Entity{{Weight: 1}}},
	} {
		_, err := SolveWaterFilling(MaxMinFairnessWaterFillingPerf, p, h, Options{})
		if err == nil || !contains(err.Error(), name) {
			t.Errorf("want error containing %q, got %v", name, err)
		}
	}
	if _, err := SolveWaterFilling("max_min_fairness_perf", p, nil, Options{}); err == nil {
		t.Error("want an error for a non-water-filling policy name")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// BenchmarkWaterFilling is Gavel's policy-runtime setup for the hierarchical policy
// (sweep_policy_runtimes.py): n jobs on n/4 GPUs of each of three types, five entities of weight
// 1–3 with 'fairness' inside, jobs assigned to entities at random.
func BenchmarkWaterFilling(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			p := benchProblem(n)
			rng := rand.New(rand.NewSource(5))
			h := &Hierarchy{JobEntity: make([]int, n)}
			for e := 0; e < 5; e++ {
				h.Entities = append(h.Entities, Entity{Weight: float64(1 + rng.Intn(3))})
			}
			for m := range h.JobEntity {
				h.JobEntity[m] = rng.Intn(5)
			}
			var sol WaterFillingSolution
			var err error
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if sol, err = SolveWaterFilling(MaxMinFairnessWaterFillingPerf, p, h, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(sol.Steps), "steps")
			b.ReportMetric(float64(sol.LPSolves), "LPs")
			b.ReportMetric(float64(sol.CappedLPs), "capped-LPs")
		})
	}
}
