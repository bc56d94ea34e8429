package lp

import (
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// randomPackedProblem draws n jobs from nt job types (throughputs, scale factor 1 or 2,
// priority 1 or 5) with every equal-scale-factor pair, at throughputs per job-type pair (a
// type with itself shares evenly; the other order of a pair is the mirror), as Gavel's
// throughputs file gives them.
func randomPackedProblem(rng *rand.Rand, nt, n int, workers []int) PackedProblem {
	tmpl := randomProblem(rng, nt, workers)
	for i := range tmpl.Jobs {
		tmpl.Jobs[i].ScaleFactor = 1 + rng.Intn(4)/3 // 1 (75 %) or 2
	}
	col := make([][][][2]float64, nt) // [type a][type b][gpu type]
	for a := range col {
		col[a] = make([][][2]float64, nt)
	}
	for a := 0; a < nt; a++ {
		for b := a; b < nt; b++ {
			for j := range workers {
				fa, fb := 0.3+0.6*rng.Float64(), 0.3+0.6*rng.Float64()
				if a == b {
					fb = fa
				}
				v := [2]float64{fa * tmpl.Jobs[a].Throughput[j], fb * tmpl.Jobs[b].Throughput[j]}
				col[a][b] = append(col[a][b], v)
				if a != b {
					col[b][a] = append(col[b][a], [2]float64{v[1], v[0]})
				}
			}
		}
	}
	p := PackedProblem{Problem: Problem{Types: tmpl.Types, Workers: workers}}
	kind := make([]int, n)
	for m := 0; m < n; m++ {
		kind[m] = rng.Intn(nt)
		jb := tmpl.Jobs[kind[m]]
		jb.ID = m
		jb.Throughput = append([]float64(nil), jb.Throughput...)
		p.Jobs = append(p.Jobs, jb)
		for o := 0; o < m; o++ {
			if p.Jobs[o].ScaleFactor == jb.ScaleFactor {
				p.Pairs = append(p.Pairs, Pair{A: o, B: m, Throughput: append([][2]float64(nil), col[kind[o]][kind[m]]...)})
			}
		}
	}
	return p
}

// refMaxMinPacked is Gavel's pair-variable LP (MaxMinFairnessPolicyWithPacking.get_allocation)
// written out on gonum's simplex: one variable per job and per pair per type, and z.
func refMaxMinPacked(t *testing.T, p PackedProblem) float64 {
	factor := make([]float64, len(p.Jobs)) // sf / (w · Σ_j T_j·W_j/ΣW)
	totalW := 0.0
	for _, w := range p.Workers {
		totalW += float64(w)
	}
	for m, jb := range p.Jobs {
		prop := 0.0
		for j, v := range jb.Throughput {
			prop += v * float64(p.Workers[j]) / totalW
		}
		factor[m] = float64(jb.ScaleFactor) / (jb.PriorityWeight * prop)
	}
	return refPackedLevel(t, p, factor)
}

// refPackedLevel is max_X min_m factor[m]·(m's throughput alone and in its pairs) on the
// pair-variable LP (simplex).
func refPackedLevel(t *testing.T, p PackedProblem, factor []float64) float64 {
	n, k, np := len(p.Jobs), len(p.Types), len(p.Pairs)
	nv := (n+np)*k + 1
	var r refLP
	r.obj = make([]float64, nv)
	r.obj[nv-1] = 1
	rowOf := func() []float64 { return make([]float64, nv) }
	time, demand := make([][]float64, n), make([][]float64, n)
	for m := range p.Jobs {
		time[m], demand[m] = rowOf(), rowOf()
		demand[m][nv-1] = 1
		for j := 0; j < k; j++ {
			time[m][m*k+j] = 1
			demand[m][m*k+j] = -factor[m] * p.Jobs[m].Throughput[j]
		}
	}
	capacity := make([][]float64, k)
	for j := range capacity {
		capacity[j] = rowOf()
		for m, jb := range p.Jobs {
			capacity[j][m*k+j] = float64(jb.ScaleFactor)
		}
	}
	for i, pr := range p.Pairs {
		for j := 0; j < k; j++ {
			v := (n+i)*k + j
			time[pr.A][v], time[pr.B][v] = 1, 1
			demand[pr.A][v] = -factor[pr.A] * pr.Throughput[j][0]
			demand[pr.B][v] = -factor[pr.B] * pr.Throughput[j][1]
			capacity[j][v] = float64(p.Jobs[pr.A].ScaleFactor)
		}
	}
	for m := range p.Jobs {
		r.rows, r.rhs = append(r.rows, time[m], demand[m]), append(r.rhs, 1, 0)
	}
	for j := range capacity {
		r.rows, r.rhs = append(r.rows, capacity[j]), append(r.rhs, float64(p.Workers[j]))
	}
	opt, _ := r.solve(t)
	return opt
}

// checkPackedInvariants asserts entries in [0, 1], each job's time alone plus in its pairs
// <= 1, and Σ sf·(singles + pairs) <= workers per type.
func checkPackedInvariants(t *testing.T, p PackedProblem, sol PackedSolution) {
	t.Helper()
	checkInvariants(t, p.Problem, sol.X) // singles alone
	sum := make([]float64, len(p.Jobs))
	used := make([]float64, len(p.Types))
	for m, row := range sol.X {
		for j, v := range row {
			sum[m] += v
			used[j] += float64(p.Jobs[m].ScaleFactor) * v
		}
	}
	if len(sol.Pairs) != len(p.Pairs) {
		t.Fatalf("%d pair rows for %d pairs", len(sol.Pairs), len(p.Pairs))
	}
	for i, row := range sol.Pairs {
		for j, v := range row {
			if !(v >= 0) || v > 1 {
				t.Fatalf("pair %d type %d: %v, want in [0,1]", i, j, v)
			}
			sum[p.Pairs[i].A] += v
			sum[p.Pairs[i].B] += v
			used[j] += float64(p.Jobs[p.Pairs[i].A].ScaleFactor) * v
		}
	}
	for m, s := range sum {
		if s > 1+1e-12 {
			t.Fatalf("job %d: time alone and in pairs sums to %v > 1", m, s)
		}
	}
	for j, u := range used {
		if u > float64(p.Workers[j])*(1+1e-12) {
			t.Fatalf("type %s: %v GPUs allocated > %d", p.Types[j], u, p.Workers[j])
		}
	}
}

func TestMaxMinFairnessPacked_MatchesPairLP(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	aggregated := 0
	for _, nt := range []int{1, 2, 4} {
		for _, n := range []int{1, 2, 3, 6, 11} {
			for _, w := range clusters {
				p := randomPackedProblem(rng, nt, n, w)
				sol, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
				if err != nil {
					t.Fatalf("nt=%d n=%d w=%v: %v", nt, n, w, err)
				}
				checkPackedInvariants(t, p, sol)
				if sol.Warning != "" {
					t.Errorf("nt=%d n=%d w=%v: %s", nt, n, w, sol.Warning)
				}
				want := refMaxMinPacked(t, p)
				if relDiff(sol.Objective, want) > 1e-7 {
					t.Errorf("nt=%d n=%d w=%v: objective %.10g, pair LP (simplex) %.10g", nt, n, w, sol.Objective, want)
				}
				if relDiff(sol.Bound, want) > 1e-7 {
					t.Errorf("nt=%d n=%d w=%v: bound %.10g, pair LP %.10g", nt, n, w, sol.Bound, want)
				}
				if sol.Classes < n {
					aggregated++
				}
			}
		}
	}
	if aggregated < 20 {
		t.Errorf("only %d instances had fewer classes than jobs: the aggregation is not exercised", aggregated)
	}
}

// Pairs whose throughputs break the classes (one pair of a class pair differs, or a pair
// inside a class is uneven) split those classes; the optimum stays the pair LP's.
func TestMaxMinFairnessPacked_InconsistentPairsSplitClasses(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for inst := 0; inst < 12; inst++ {
		p := randomPackedProblem(rng, 2, 8, []int{2, 2, 4})
		base, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		i := rng.Intn(len(p.Pairs))
		p.Pairs[i].Throughput[0][inst%2] *= 1.7
		sol, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkPackedInvariants(t, p, sol)
		if sol.Classes <= base.Classes {
			t.Errorf("instance %d: %d classes after changing pair %d, %d before: want more", inst, sol.Classes, i, base.Classes)
		}
		if want := refMaxMinPacked(t, p); relDiff(sol.Objective, want) > 1e-7 {
			t.Errorf("instance %d: objective %.10g, pair LP %.10g", inst, sol.Objective, want)
		}
	}
}

// Two jobs on one GPU that keep 80 % of their speed when they share it. Proportional
// throughput (Gavel's equal split, rows scaled to sum 1) is T, so a job's level is T·x/T = x;
// time slicing gives x = 1/2 each: level 0.5. Packed: the pair runs all the time, each job at
// 0.8·T: level 0.8.
func TestMaxMinFairnessPacked_PackingHelps(t *testing.T) {
	p := PackedProblem{Problem: Problem{Types: []string{"v100"}, Workers: []int{1}, Jobs: []Job{
		{ID: 0, Throughput: []float64{10}, ScaleFactor: 1, PriorityWeight: 1},
		{ID: 1, Throughput: []float64{4}, ScaleFactor: 1, PriorityWeight: 1}}},
		Pairs: []Pair{{A: 0, B: 1, Throughput: [][2]float64{{8, 3.2}}}}}
	unpacked, err := solveDetail(MaxMinFairnessPerf, p.Problem, Options{})
	if err != nil {
		t.Fatal(err)
	}
	packed, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPackedInvariants(t, p, packed)
	if math.Abs(unpacked.Objective-0.5) > 1e-8 || math.Abs(packed.Objective-0.8) > 1e-8 {
		t.Errorf("objectives: unpacked %v (want 0.5), packed %v (want 0.8)", unpacked.Objective, packed.Objective)
	}
	if packed.Pairs[0][0] < 1-1e-6 {
		t.Errorf("the pair gets %v of the GPU, want all of it", packed.Pairs[0][0])
	}
}

// Pairs only add options: the packed optimum is never below the unpacked one.
func TestMaxMinFairnessPacked_AtLeastUnpacked(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for inst := 0; inst < 30; inst++ {
		p := randomPackedProblem(rng, 1+rng.Intn(5), 1+rng.Intn(20), clusters[inst%len(clusters)])
		packed, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		unpacked, err := solveDetail(MaxMinFairnessPerf, p.Problem, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if packed.Objective < unpacked.Objective*(1-1e-7) {
			t.Errorf("instance %d: packed %.10g < unpacked %.10g", inst, packed.Objective, unpacked.Objective)
		}
	}
}

func TestMaxMinFairnessPacked_Deterministic(t *testing.T) {
	p := randomPackedProblem(rand.New(rand.NewSource(3)), 5, 40, []int{8, 16, 24})
	a, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := SolvePacked(MaxMinFairnessPacked, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two solves of the same problem differ")
	}
}

func TestSolvePacked_BadInput(t *testing.T) {
	base := func() PackedProblem {
		return PackedProblem{Problem: Problem{Types: []string{"v100"}, Workers: []int{2}, Jobs: []Job{
			{ID: 7, Throughput: []float64{1}, ScaleFactor: 1, PriorityWeight: 1},
			{ID: 8, Throughput: []float64{1}, ScaleFactor: 2, PriorityWeight: 1},
			{ID: 9, Throughput: []float64{1}, ScaleFactor: 1, PriorityWeight: 1}}}}
	}
	for _, c := range []struct {
		pairs []Pair
		want  string
	}{
		{[]Pair{{A: 0, B: 1, Throughput: [][2]float64{{1, 1}}}}, "jobs 7 and 8 have scale factors 1 and 2"},
		{[]Pair{{A: 0, B: 3, Throughput: [][2]float64{{1, 1}}}}, "want two different indices"},
		{[]Pair{{A: 0, B: 2, Throughput: [][2]float64{{1, 1}}}, {A: 2, B: 0, Throughput: [][2]float64{{1, 1}}}}, "given twice"},
		{[]Pair{{A: 0, B: 2, Throughput: [][2]float64{{1, -1}}}}, "throughput on v100 is -1"},
		{[]Pair{{A: 0, B: 2}}, "0 throughputs for 1 types"},
	} {
		p := base()
		p.Pairs = c.pairs
		if _, err := SolvePacked(MaxMinFairnessPacked, p, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pairs %v: error %v, want %q", c.pairs, err, c.want)
		}
	}
	if _, err := SolvePacked("fifo_packed", base(), Options{}); err == nil || !strings.Contains(err.Error(), "unknown packing policy") {
		t.Errorf("unknown policy: %v", err)
	}
}

// packedThroughputs returns each job's throughput alone plus in its pairs under sol.
func packedThroughputs(p PackedProblem, sol PackedSolution) []float64 {
	tp := make([]float64, len(p.Jobs))
	for m, row := range sol.X {
		for j, v := range row {
			tp[m] += v * p.Jobs[m].Throughput[j]
		}
	}
	for i, row := range sol.Pairs {
		for j, v := range row {
			tp[p.Pairs[i].A] += v * p.Pairs[i].Throughput[j][0]
			tp[p.Pairs[i].B] += v * p.Pairs[i].Throughput[j][1]
		}
	}
	return tp
}

// min_total_duration_packed: its bound is T* = 1/z* of the pair LP with factor 1/remaining,
// and its X lets every job finish its remaining steps within the final T.
func TestMinTotalDurationPacked_MatchesPairLP(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	for inst := 0; inst < 16; inst++ {
		p := randomPackedProblem(rng, 1+rng.Intn(3), 1+rng.Intn(9), clusters[inst%len(clusters)])
		sol, err := SolvePacked(MinTotalDurationPacked, p, Options{})
		if err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		checkPackedInvariants(t, p, sol)
		factor := make([]float64, len(p.Jobs))
		for m, jb := range p.Jobs {
			factor[m] = 1 / jb.RemainingSteps
		}
		tStar := 1 / refPackedLevel(t, p, factor)
		if relDiff(sol.Bound, tStar) > 1e-7 {
			t.Errorf("instance %d: T* %.10g, pair LP %.10g", inst, sol.Bound, tStar)
		}
		if sol.Objective < tStar*(1-1e-9) || sol.Objective > tStar*1.06 {
			t.Errorf("instance %d: final T %.10g outside [T*, 1.06 T*] = [%.10g, …]", inst, sol.Objective, tStar)
		}
		for m, tp := range packedThroughputs(p, sol) {
			if tp*sol.Objective < p.Jobs[m].RemainingSteps*(1-1e-6) {
				t.Errorf("instance %d: job %d does %.6g steps in T = %.6g, needs %.6g", inst, m, tp*sol.Objective, sol.Objective, p.Jobs[m].RemainingSteps)
			}
		}
	}
}

// finish_time_fairness_packed: X reaches the ρ it reports, and no allocation of the pair LP
// reaches ρ·(1 − 1e-6) (its max-min level there is below 1).
func TestFinishTimeFairnessPacked_Optimal(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	for inst := 0; inst < 12; inst++ {
		p := randomPackedProblem(rng, 1+rng.Intn(3), 1+rng.Intn(8), clusters[inst%len(clusters)])
		sol, err := SolvePacked(FinishTimeFairnessPacked, p, Options{})
		if err != nil {
			t.Fatalf("instance %d: %v", inst, err)
		}
		checkPackedInvariants(t, p, sol)
		n := float64(len(p.Jobs))
		e := make([]float64, len(p.Jobs))
		got := 0.0
		tp := packedThroughputs(p, sol)
		for m, jb := range p.Jobs {
			iso, sum := 0.0, 0.0 // Gavel's isolated split: W_j/n/sf, row scaled to <= 1
			for j, v := range jb.Throughput {
				x := float64(p.Workers[j]) / n / float64(jb.ScaleFactor)
				iso, sum = iso+v*x, sum+x
			}
			iso /= math.Max(sum, 1)
			e[m] = jb.CumulativeIsolatedTime + jb.RemainingSteps/iso
			got = math.Max(got, (jb.TimeSinceStart+jb.RemainingSteps*jb.PriorityWeight/tp[m])/e[m])
		}
		if relDiff(got, sol.Objective) > 1e-7 {
			t.Errorf("instance %d: X reaches ρ %.10g, reported %.10g", inst, got, sol.Objective)
		}
		rho := sol.Objective * (1 - 1e-6)
		factor := make([]float64, len(p.Jobs))
		for m, jb := range p.Jobs {
			factor[m] = (rho*e[m] - jb.TimeSinceStart) / (jb.RemainingSteps * jb.PriorityWeight)
		}
		if z := refPackedLevel(t, p, factor); z >= 1 {
			t.Errorf("instance %d: ρ %.10g is reachable (pair LP level %.10g): %.10g is not optimal", inst, rho, z, sol.Objective)
		}
	}
}
