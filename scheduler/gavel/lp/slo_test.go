package lp

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	gonumlp "gonum.org/v1/gonum/optimize/convex/lp"
)

// refCostSLOs is the reference for the SLO policy, built from the problem data alone: it says
// whether every SLO can be met (max-min over the SLO jobs of T·X/rhs >= 1, by gonum's simplex)
// and, if so, max Σ T/price·X under the base constraints and T_m·X_m >= rhs_m·(1 − sloRelax).
func refCostSLOs(t *testing.T, p Problem, prices, rhs []float64) (feasible bool, opt float64) {
	n, k := len(p.Jobs), len(p.Types)
	sf, w := scaleFactors(p), floats(p.Workers)
	var coef [][]float64
	var sub []int
	for m, r := range rhs {
		if r > 0 {
			row := make([]float64, k)
			for j := range row {
				row[j] = p.Jobs[m].Throughput[j] / r
			}
			coef, sub = append(coef, row), append(sub, m)
		}
	}
	subSF := make([]float64, len(sub))
	for i, m := range sub {
		subSF[i] = sf[m]
	}
	if len(sub) > 0 && refMaxMin(t, coef, subSF, w) < 1 {
		return false, 0
	}
	r := refBase(n, k, 0, sf, w)
	for m, jb := range p.Jobs {
		for j, v := range jb.Throughput {
			r.obj[m*k+j] = v / prices[j]
		}
		if rhs[m] > 0 {
			row := make([]float64, n*k)
			for j, v := range jb.Throughput {
				row[m*k+j] = -v
			}
			r.rows, r.rhs = append(r.rows, row), append(r.rhs, -rhs[m]*(1-sloRelax))
		}
	}
	return true, refSolveTwoPhase(t, r)
}

// refSolveTwoPhase solves r with gonum's simplex after converting it to standard form; rows with
// a negative right-hand side (the SLO rows) get a surplus instead of a slack, which gonum's
// Simplex handles by its own phase one.
func refSolveTwoPhase(t *testing.T, r refLP) float64 {
	t.Helper()
	nv, nr := len(r.obj), len(r.rows)
	a := mat.NewDense(nr, nv+nr, nil)
	b := make([]float64, nr)
	c := make([]float64, nv+nr)
	for i, v := range r.obj {
		c[i] = -v
	}
	for i, row := range r.rows {
		for j, v := range row {
			a.Set(i, j, v)
		}
		a.Set(i, nv+i, 1)
		b[i] = r.rhs[i]
	}
	opt, _, err := gonumlp.Simplex(c, a, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("reference simplex: %v", err)
	}
	return -opt
}

// The SLO policy equals the reference on random problems: the cost optimum under the SLO rows
// where they can all be met (and X meets them), the plain cost optimum where they cannot
// (Gavel re-solves without them), with Solution.SLOsDropped saying which.
func TestCostSLOs_MatchesSimplex(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	prices := []float64{3.06, 1.46, 0.9}
	met, dropped := 0, 0
	for trial := 0; trial < 40; trial++ {
		w := clusters[trial%len(clusters)]
		p := randomProblem(rng, 2+rng.Intn(12), w)
		rhs := make([]float64, len(p.Jobs))
		tight := []float64{0.05, 0.3, 1, 3}[trial%4] // deadline as a multiple of the time on a V100
		for m := range p.Jobs {
			jb := &p.Jobs[m]
			if rng.Intn(3) == 0 {
				continue
			}
			jb.HasSLO = true
			jb.SLOTimeLeftS = jb.RemainingSteps / jb.Throughput[0] / tight * (0.5 + rng.Float64())
			rhs[m] = jb.RemainingSteps / jb.SLOTimeLeftS
		}
		if rng.Intn(4) == 0 { // a passed deadline constrains nothing
			p.Jobs[0].HasSLO, p.Jobs[0].SLOTimeLeftS, rhs[0] = true, -100, 0
		}
		sol, err := solveDetail(MaxSumThroughputPerCostPerfSLOs, p, Options{Prices: prices})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, p, sol.X)
		feasible, want := refCostSLOs(t, p, prices, rhs)
		if !feasible {
			dropped++
			plain, err := solveDetail(MaxSumThroughputPerCostPerf, p, Options{Prices: prices})
			if err != nil {
				t.Fatal(err)
			}
			if !sol.SLOsDropped || relDiff(sol.Objective, plain.Objective) > 1e-9 {
				t.Errorf("trial %d: SLOs infeasible, dropped=%v, objective %v, plain cost policy %v", trial, sol.SLOsDropped, sol.Objective, plain.Objective)
			}
			continue
		}
		met++
		if sol.SLOsDropped || relDiff(sol.Objective, want) > 1e-6 {
			t.Errorf("trial %d: dropped=%v objective %v, simplex %v", trial, sol.SLOsDropped, sol.Objective, want)
		}
		for m, jb := range p.Jobs {
			got := 0.0
			for j, v := range jb.Throughput {
				got += v * sol.X[m][j]
			}
			if rhs[m] > 0 && got < rhs[m]*(1-1e-5) {
				t.Errorf("trial %d: job %d gets %v steps/s, its SLO needs %v", trial, m, got, rhs[m])
			}
		}
	}
	if met < 5 || dropped < 5 {
		t.Errorf("%d trials met their SLOs, %d dropped them: the test should see both", met, dropped)
	}
}

// A hand case: one V100 ($3/h) and one K80 ($1/h). A runs 10 / 2 steps/s, B 4 / 2. Per dollar
// A prefers the V100 (10/3 > 2) and B the K80 (2 > 4/3): the cost optimum is A on the V100, B on
// the K80, B at 2 steps/s. B's SLO asks for 3 steps/s: 4·x + 2·y >= 3 with x + y <= 1 needs
// x >= 1/2 of the V100, which A gives up.
func TestCostSLOs_SLOMovesAJobToAFasterType(t *testing.T) {
	p := Problem{Types: []string{"v100", "k80"}, Workers: []int{1, 1}, Jobs: []Job{
		{ID: 0, Throughput: []float64{10, 2}, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 1e4},
		{ID: 1, Throughput: []float64{4, 2}, ScaleFactor: 1, PriorityWeight: 1, RemainingSteps: 3000, HasSLO: true, SLOTimeLeftS: 1000},
	}}
	opts := Options{Prices: []float64{3, 1}}
	rate := func(x Allocation, m int) float64 {
		return p.Jobs[m].Throughput[0]*x[m][0] + p.Jobs[m].Throughput[1]*x[m][1]
	}
	plain, err := Solve(MaxSumThroughputPerCostPerf, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := rate(plain, 1); math.Abs(r-2) > 1e-6 {
		t.Fatalf("without SLOs B runs at %v, want 2 (the K80)", r)
	}
	slo, err := solveDetail(MaxSumThroughputPerCostPerfSLOs, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := rate(slo.X, 1); r < 3*(1-1e-5) || slo.SLOsDropped {
		t.Errorf("with B's SLO (3000 steps in 1000 s) B runs at %v (dropped %v), want >= 3", r, slo.SLOsDropped)
	}
	// Optimum: B at x = y = 1/2 (4·0.5 + 2·0.5 = 3), A on the other halves of both GPUs:
	// A 10·0.5/3 + 2·0.5/1 = 2.667, B 4·0.5/3 + 2·0.5/1 = 1.667; 4.333 in all (5.333 without).
	if math.Abs(slo.Objective-13.0/3) > 1e-4 {
		t.Errorf("objective %v, want 13/3", slo.Objective)
	}
	// A deadline B cannot meet even alone (3000 steps in 500 s: 6 steps/s; a whole V100
	// gives 4): dropped.
	p.Jobs[1].SLOTimeLeftS = 500
	d, err := solveDetail(MaxSumThroughputPerCostPerfSLOs, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !d.SLOsDropped || math.Abs(rate(d.X, 1)-2) > 1e-6 {
		t.Errorf("infeasible SLO: dropped=%v, B at %v; want the plain cost allocation (2)", d.SLOsDropped, rate(d.X, 1))
	}
	p.Jobs[1].SLOTimeLeftS = math.Inf(1)
	if _, err := Solve(MaxSumThroughputPerCostPerfSLOs, p, opts); err == nil || !strings.Contains(err.Error(), "job 1: SLO time left") {
		t.Errorf("infinite time left: %v", err)
	}
	if _, err := Solve(MaxSumThroughputPerCostPerfSLOs, p, Options{}); err == nil || !strings.Contains(err.Error(), "Prices") {
		t.Errorf("no prices: %v", err)
	}
}
