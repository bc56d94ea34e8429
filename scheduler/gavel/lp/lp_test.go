package lp

import (
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func floats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func scaleFactors(p Problem) []float64 {
	out := make([]float64, len(p.Jobs))
	for m, jb := range p.Jobs {
		out[m] = float64(jb.ScaleFactor)
	}
	return out
}

// maxMinCoef is Gavel's objective coefficient, derived here from the formula in
// max_min_fairness.py: T·sf / (w · Σ_j T_j·W_j/ΣW).
func maxMinCoef(p Problem, agnostic bool) [][]float64 {
	total := 0.0
	for _, w := range p.Workers {
		total += float64(w)
	}
	coef := make([][]float64, len(p.Jobs))
	for m, jb := range p.Jobs {
		tp := append([]float64(nil), jb.Throughput...)
		if agnostic {
			for j := range tp {
				tp[j] = 1
			}
		}
		prop := 0.0
		for j, v := range tp {
			prop += v * float64(p.Workers[j]) / total
		}
		coef[m] = make([]float64, len(tp))
		for j, v := range tp {
			coef[m][j] = v * float64(jb.ScaleFactor) / (jb.PriorityWeight * prop)
		}
	}
	return coef
}

func minRow(coef [][]float64, x Allocation) float64 {
	worst := math.Inf(1)
	for m, row := range coef {
		v := 0.0
		for j, c := range row {
			v += c * x[m][j]
		}
		worst = math.Min(worst, v)
	}
	return worst
}

var clusters = [][]int{{1, 1, 1}, {4, 4, 4}, {8, 16, 24}, {36, 36, 36}, {2, 0, 6}}

func TestMaxMinFairness_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, policy := range []string{MaxMinFairnessPerf, MaxMinFairness} {
		for _, n := range []int{1, 2, 5, 12, 30} {
			for _, w := range clusters {
				p := randomProblem(rng, n, w)
				sol, err := solveDetail(policy, p, Options{})
				if err != nil {
					t.Fatalf("%s n=%d w=%v: %v", policy, n, w, err)
				}
				checkInvariants(t, p, sol.X)
				coef := maxMinCoef(p, policy == MaxMinFairness)
				want := refMaxMin(t, coef, scaleFactors(p), floats(w))
				if relDiff(sol.Objective, want) > 1e-7 {
					t.Errorf("%s n=%d w=%v: objective %v, simplex %v", policy, n, w, sol.Objective, want)
				}
				// X attains the optimum, and the dual bound certifies it.
				if got := minRow(coef, sol.X); relDiff(got, want) > 1e-7 {
					t.Errorf("%s n=%d w=%v: X reaches min %v, optimum %v", policy, n, w, got, want)
				}
				if relDiff(sol.Bound, sol.Objective) > 1e-8 {
					t.Errorf("%s n=%d w=%v: bound %v vs objective %v", policy, n, w, sol.Bound, sol.Objective)
				}
			}
		}
	}
}

func TestMaxSumThroughput_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	prices := []float64{3.06, 1.46, 0.9}
	for _, policy := range []string{MaxSumThroughputPerf, MaxSumThroughputPerCostPerf} {
		for _, n := range []int{1, 3, 10, 30} {
			for _, w := range clusters {
				p := randomProblem(rng, n, w)
				opts := Options{}
				if policy == MaxSumThroughputPerCostPerf {
					opts.Prices = prices
				}
				if policy == MaxSumThroughputPerf {
					opts.Prices = []float64{100, 1, 1} // ignored: Gavel's policy uses unit prices
				}
				sol, err := solveDetail(policy, p, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, p, sol.X)
				if policy == MaxSumThroughputPerf {
					opts.Prices = nil
				}
				g := make([][]float64, n)
				got := 0.0
				for m, jb := range p.Jobs {
					g[m] = make([]float64, 3)
					for j, v := range jb.Throughput {
						g[m][j] = v
						if opts.Prices != nil {
							g[m][j] /= prices[j]
						}
						got += g[m][j] * sol.X[m][j]
					}
				}
				want := refMaxSum(t, g, scaleFactors(p), floats(w))
				if relDiff(sol.Objective, want) > 1e-7 || relDiff(got, want) > 1e-7 {
					t.Errorf("%s n=%d w=%v: objective %v, X gives %v, simplex %v", policy, n, w, sol.Objective, got, want)
				}
			}
		}
	}
}

// makespanCoef is T_mj/remaining_m after the policy's rewrite of the throughputs.
func makespanCoef(p Problem, agnostic bool) [][]float64 {
	coef := make([][]float64, len(p.Jobs))
	for m, jb := range p.Jobs {
		coef[m] = make([]float64, len(jb.Throughput))
		for j := range jb.Throughput {
			v := jb.Throughput[j]
			if agnostic {
				v = jb.Throughput[0] // v100 is Types[0] in randomProblem
			}
			coef[m][j] = v / jb.RemainingSteps
		}
	}
	return coef
}

func TestMinTotalDuration_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, policy := range []string{MinTotalDurationPerf, MinTotalDuration} {
		for _, n := range []int{1, 4, 12, 30} {
			for _, w := range clusters {
				p := randomProblem(rng, n, w)
				sol, err := solveDetail(policy, p, Options{})
				if err != nil {
					t.Fatalf("%s n=%d w=%v: %v", policy, n, w, err)
				}
				checkInvariants(t, p, sol.X)
				coef := makespanCoef(p, policy == MinTotalDuration)
				zStar := refMaxMin(t, coef, scaleFactors(p), floats(w))
				if relDiff(sol.Bound, 1/zStar) > 1e-7 {
					t.Errorf("%s n=%d w=%v: T* %v, simplex %v", policy, n, w, sol.Bound, 1/zStar)
				}
				// Gavel's search ends at most ~5% above T* (more only where a decade boundary
				// (1e6, 1e7, ...) lies between, or at its 100 s floor), and X meets that T.
				if sol.Objective < sol.Bound*(1-1e-9) || sol.Objective > 1.1*math.Max(sol.Bound, 100) {
					t.Errorf("%s: final T %v for T* %v", policy, sol.Objective, sol.Bound)
				}
				if got := minRow(coef, sol.X); got*sol.Objective < 1-1e-6 {
					t.Errorf("%s n=%d w=%v: X finishes by %v, not by T=%v", policy, n, w, 1/got, sol.Objective)
				}
			}
		}
	}
}

func TestGavelSearch_ReplaysProbes(t *testing.T) {
	for _, tStar := range []float64{1, 99, 100, 5000, 999999, 1e6 + 1, 3.3e7} {
		got, probes, err := gavelSearch(func(T float64) bool { return T >= tStar })
		if err != nil {
			t.Fatal(err)
		}
		// Brute replay of the Python loop, written out here independently.
		minT, maxT, last := 100.0, 1e6, 1e6
		var want float64
		found := false
		n := 0
		for !found {
			for 1.05*minT < maxT {
				T := (minT + maxT) / 2
				n++
				if T >= tStar {
					want, found, maxT = T, true, T
				} else {
					minT = T
				}
			}
			maxT, minT, last = last*10, last, last*10
		}
		if got != want || probes != n {
			t.Errorf("T*=%v: got T=%v after %d probes, want %v after %d", tStar, got, probes, want, n)
		}
	}
}

func TestSolve_UnknownPolicyNamesIt(t *testing.T) {
	_, err := Solve("max_min_fairness_packed", Problem{}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"max_min_fairness_packed"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSolve_BadInputNamesField(t *testing.T) {
	base := func() Problem { return randomProblem(rand.New(rand.NewSource(4)), 3, []int{1, 1, 1}) }
	cases := []struct {
		name, want string
		edit       func(p *Problem, o *Options)
	}{
		{"negative throughput", "job 1: throughput on p100", func(p *Problem, _ *Options) { p.Jobs[1].Throughput[1] = -1 }},
		{"nan throughput", "job 2: throughput on k80", func(p *Problem, _ *Options) { p.Jobs[2].Throughput[2] = math.NaN() }},
		{"short row", "job 0: 2 throughputs for 3 types", func(p *Problem, _ *Options) { p.Jobs[0].Throughput = p.Jobs[0].Throughput[:2] }},
		{"scale factor", "job 1: scale factor 0", func(p *Problem, _ *Options) { p.Jobs[1].ScaleFactor = 0 }},
		{"priority", "job 0: priority weight 0", func(p *Problem, _ *Options) { p.Jobs[0].PriorityWeight = 0 }},
		{"workers", "2 worker counts for 3 types", func(p *Problem, _ *Options) { p.Workers = p.Workers[:2] }},
		{"negative workers", "type k80: -1 workers", func(p *Problem, _ *Options) { p.Workers[2] = -1 }},
		{"remaining", "job 2: remaining steps is -5", func(p *Problem, _ *Options) { p.Jobs[2].RemainingSteps = -5 }},
		{"prices", "2 prices for 3 types", func(_ *Problem, o *Options) { o.Prices = []float64{1, 2} }},
	}
	for _, c := range cases {
		p, o := base(), Options{}
		c.edit(&p, &o)
		_, err := Solve(MaxMinFairnessPerf, p, o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if _, err := Solve(MaxSumThroughputPerCostPerf, base(), Options{}); err == nil || !strings.Contains(err.Error(), "Prices") {
		t.Errorf("cost policy without prices: err = %v", err)
	}
}

func TestSolve_EdgeCases(t *testing.T) {
	for _, policy := range Policies() {
		opts := Options{Prices: []float64{3, 1.5, 1}}
		// No jobs: an empty allocation.
		x, err := Solve(policy, Problem{Types: []string{"v100", "p100", "k80"}, Workers: []int{1, 1, 1}}, opts)
		if err != nil || len(x) != 0 {
			t.Errorf("%s, no jobs: %v, %v", policy, x, err)
		}
		// A job with all-zero throughput gets a zero row; the others are still served.
		p := randomProblem(rand.New(rand.NewSource(5)), 4, []int{2, 2, 2})
		p.Jobs[1].Throughput = []float64{0, 0, 0}
		x, err = Solve(policy, p, opts)
		if err != nil {
			t.Fatalf("%s, zero-throughput job: %v", policy, err)
		}
		checkInvariants(t, p, x)
		if policy != MaxMinFairness && (x[1][0] != 0 || x[1][1] != 0 || x[1][2] != 0) {
			t.Errorf("%s: zero-throughput job got %v", policy, x[1])
		}
		if x[0][0]+x[0][1]+x[0][2] <= 0 {
			t.Errorf("%s: job 0 got nothing: %v", policy, x[0])
		}
		// A type with no workers is never allocated.
		p = randomProblem(rand.New(rand.NewSource(6)), 5, []int{3, 0, 2})
		x, err = Solve(policy, p, opts)
		if err != nil {
			t.Fatalf("%s, empty type: %v", policy, err)
		}
		for m := range x {
			if x[m][1] != 0 {
				t.Errorf("%s: job %d on a type with no workers: %v", policy, m, x[m])
			}
		}
	}
}

func TestSolve_Deterministic(t *testing.T) {
	p := randomProblem(rand.New(rand.NewSource(7)), 200, []int{36, 36, 36})
	for _, policy := range Policies() {
		opts := Options{Prices: []float64{3, 1.5, 1}}
		a, err := Solve(policy, p, opts)
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		b, err := Solve(policy, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two solves differ", policy)
		}
	}
}

func TestPriorityWeight_ShrinksShare(t *testing.T) {
	// Two identical jobs on one GPU with weights 1 and 5 split time 1:5: Gavel divides the
	// normalised throughput by the weight, so the weight-5 job needs 5x the time for the same level.
	p := Problem{Types: []string{"v100"}, Workers: []int{1}, Jobs: []Job{
		{ID: 0, Throughput: []float64{2}, ScaleFactor: 1, PriorityWeight: 1},
		{ID: 1, Throughput: []float64{2}, ScaleFactor: 1, PriorityWeight: 5},
	}}
	x, err := Solve(MaxMinFairnessPerf, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0][0]-1.0/6) > 1e-6 || math.Abs(x[1][0]-5.0/6) > 1e-6 {
		t.Errorf("x = %v, want [[1/6] [5/6]]", x)
	}
}

func TestScaleFactor_CountsGPUs(t *testing.T) {
	// One 8-GPU job and one 1-GPU job on 8 GPUs of one type, both 10 steps/s: prop = 10·8/8 = 10,
	// c0 = 10·8/10 = 8, c1 = 10·1/10 = 1. max min(8·x0, x1) s.t. 8·x0 + x1 <= 8, x <= 1: x1 <= 1
	// caps the level at 1, reached with x1 = 1 and any x0 in [1/8, 7/8] (capacity 8·x0 + 1 <= 8).
	p := Problem{Types: []string{"v100"}, Workers: []int{8}, Jobs: []Job{
		{ID: 0, Throughput: []float64{10}, ScaleFactor: 8, PriorityWeight: 1},
		{ID: 1, Throughput: []float64{10}, ScaleFactor: 1, PriorityWeight: 1},
	}}
	sol, err := solveDetail(MaxMinFairnessPerf, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p, sol.X)
	if math.Abs(sol.Objective-1) > 1e-7 || sol.X[1][0] < 1-1e-6 || sol.X[0][0] < 1.0/8-1e-6 || sol.X[0][0] > 7.0/8+1e-6 {
		t.Errorf("objective %v, x = %v", sol.Objective, sol.X)
	}
}

// ftfRatios returns ρ_m(X) for every job with remaining steps, with the isolated throughput
// derived here from isolated.py's formula.
func ftfRatios(p Problem, x Allocation) []float64 {
	n := float64(len(p.Jobs))
	var out []float64
	for m, jb := range p.Jobs {
		sum, iso, tp := 0.0, 0.0, 0.0
		for j, v := range jb.Throughput {
			xi := float64(p.Workers[j]) / n / float64(jb.ScaleFactor)
			sum += xi
			iso += v * xi
			tp += v * x[m][j]
		}
		if sum > 1 {
			iso /= sum
		}
		e := jb.CumulativeIsolatedTime + jb.RemainingSteps/iso
		out = append(out, (jb.TimeSinceStart+jb.RemainingSteps/tp)/e)
	}
	return out
}

func TestFinishTimeFairness_MatchesBisectionOverSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, n := range []int{1, 3, 8, 16} {
		for _, w := range [][]int{{1, 1, 1}, {4, 4, 4}, {8, 16, 24}} {
			p := randomProblem(rng, n, w)
			sol, err := solveDetail(FinishTimeFairnessPerf, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p, sol.X)
			// X achieves the reported ρ.
			worst := 0.0
			for _, r := range ftfRatios(p, sol.X) {
				worst = math.Max(worst, r)
			}
			if worst > sol.Objective*(1+1e-7) {
				t.Errorf("n=%d w=%v: X reaches ρ=%v, reported %v", n, w, worst, sol.Objective)
			}
			// Independent: ρ* by bisection with the simplex as the feasibility oracle.
			iso := ftfRatios(p, isolatedAlloc(p))
			lo, hi := 0.0, 0.0
			for _, r := range iso {
				hi = math.Max(hi, r)
			}
			for it := 0; it < 60 && hi-lo > 1e-9*hi; it++ {
				rho := (lo + hi) / 2
				if ftfFeasible(t, p, rho) {
					hi = rho
				} else {
					lo = rho
				}
			}
			if relDiff(sol.Objective, hi) > 1e-6 {
				t.Errorf("n=%d w=%v: ρ* = %v, simplex bisection %v", n, w, sol.Objective, hi)
			}
		}
	}
}

func isolatedAlloc(p Problem) Allocation {
	n := float64(len(p.Jobs))
	x := make(Allocation, len(p.Jobs))
	for m, jb := range p.Jobs {
		x[m] = make([]float64, len(p.Types))
		sum := 0.0
		for j := range p.Types {
			x[m][j] = float64(p.Workers[j]) / n / float64(jb.ScaleFactor)
			sum += x[m][j]
		}
		for j := range x[m] {
			x[m][j] /= math.Max(sum, 1)
		}
	}
	return x
}

// ftfFeasible: can every job reach ρ_m <= rho? Throughput demand r/(ρE − t) per job.
func ftfFeasible(t *testing.T, p Problem, rho float64) bool {
	coef := make([][]float64, len(p.Jobs))
	ix := isolatedAlloc(p)
	for m, jb := range p.Jobs {
		isoTp := 0.0
		for j, v := range jb.Throughput {
			isoTp += v * ix[m][j]
		}
		e := jb.CumulativeIsolatedTime + jb.RemainingSteps/isoTp
		slack := rho*e - jb.TimeSinceStart
		if slack <= 0 {
			return false
		}
		coef[m] = make([]float64, len(jb.Throughput))
		for j, v := range jb.Throughput {
			coef[m][j] = v * slack / jb.RemainingSteps
		}
	}
	return refFeasible(t, coef, scaleFactors(p), floats(p.Workers))
}

func TestFTFTracker_AccumulatesIsolatedTime(t *testing.T) {
	// One type with 2 GPUs, jobs A (10 steps/s) and B (4 steps/s), scale factor 1: the isolated
	// allocation is 2/2 = 1 GPU each (row sum 1), so iso_A = 10, iso_B = 4.
	p := Problem{Types: []string{"v100"}, Workers: []int{2}, Jobs: []Job{
		{ID: 7, Throughput: []float64{10}, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 1000},
		{ID: 9, Throughput: []float64{4}, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 800},
	}}
	tr := NewFTFTracker()
	if _, err := tr.Solve(FinishTimeFairnessPerf, p, Options{}); err != nil {
		t.Fatal(err)
	}
	// Next solve: A ran 400 steps (400/10 = 40 s of isolated time), B 200 steps (200/4 = 50 s);
	// a new job C starts at 0.
	p.Jobs[0].RemainingSteps, p.Jobs[1].RemainingSteps = 600, 600
	p.Jobs = append(p.Jobs, Job{ID: 11, Throughput: []float64{5}, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 50})
	x, err := tr.Solve(FinishTimeFairnessPerf, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p, x)
	for id, want := range map[int]float64{7: 40, 9: 50, 11: 0} {
		if got := tr.CumulativeIsolatedTime(id); math.Abs(got-want) > 1e-9 {
			t.Errorf("job %d: cumulative isolated time %v, want %v", id, got, want)
		}
	}
	if p.Jobs[0].CumulativeIsolatedTime != 0 {
		t.Error("tracker modified the caller's jobs")
	}
}

// solveDetail is Solve with the optimum and its certificate.
func solveDetail(policy string, p Problem, opts Options) (Solution, error) {
	return solve(policy, &p, opts)
}
