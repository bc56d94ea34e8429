package lp

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// This file holds the independent reference: gonum's dense simplex (test-only) on the same LPs,
// built here from the problem data with no code shared with the package.

// refLP is an inequality LP: maximise obj·v s.t. rows·v <= rhs, v >= 0.
type refLP struct {
	obj  []float64
	rows [][]float64
	rhs  []float64
}

// solve returns the optimum with gonum's simplex on the standard form with one slack per row
// (a slack enters with −1 for rows whose right-hand side is negative, after negating the row).
func (r refLP) solve(t testing.TB) (float64, []float64) {
	t.Helper()
	nv, nr := len(r.obj), len(r.rows)
	a := mat.NewDense(nr, nv+nr, nil)
	b := make([]float64, nr)
	c := make([]float64, nv+nr)
	for i, v := range r.obj {
		c[i] = -v
	}
	for i, row := range r.rows {
		sign := 1.0
		if r.rhs[i] < 0 {
			sign = -1
		}
		for j, v := range row {
			a.Set(i, j, sign*v)
		}
		a.Set(i, nv+i, sign)
		b[i] = sign * r.rhs[i]
	}
	opt, x, err := lp.Simplex(c, a, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("reference simplex: %v", err)
	}
	return -opt, x[:nv]
}

// refBase returns the base-constraint rows over n*k variables (plus extra trailing variables).
func refBase(n, k, extra int, sf []float64, workers []float64) refLP {
	var r refLP
	nv := n*k + extra
	r.obj = make([]float64, nv)
	for m := 0; m < n; m++ {
		row := make([]float64, nv)
		for j := 0; j < k; j++ {
			row[m*k+j] = 1
		}
		r.rows, r.rhs = append(r.rows, row), append(r.rhs, 1)
	}
	for j := 0; j < k; j++ {
		row := make([]float64, nv)
		for m := 0; m < n; m++ {
			row[m*k+j] = sf[m]
		}
		r.rows, r.rhs = append(r.rows, row), append(r.rhs, workers[j])
	}
	return r
}

// refMaxMin returns max_X min_m coef_m·X_m under the base constraints.
func refMaxMin(t testing.TB, coef [][]float64, sf, workers []float64) float64 {
	n, k := len(coef), len(workers)
	r := refBase(n, k, 1, sf, workers)
	r.obj[n*k] = 1
	for m := 0; m < n; m++ {
		row := make([]float64, n*k+1)
		for j := 0; j < k; j++ {
			row[m*k+j] = -coef[m][j]
		}
		row[n*k] = 1
		r.rows, r.rhs = append(r.rows, row), append(r.rhs, 0)
	}
	z, _ := r.solve(t)
	return z
}

// refFeasible says whether some X meets coef_m·X_m >= 1 for all m, by maximising the total
// slack-free demand met: max Σ s_m with s_m <= 1 and coef_m·X_m >= s_m.
func refFeasible(t *testing.T, coef [][]float64, sf, workers []float64) bool {
	n, k := len(coef), len(workers)
	r := refBase(n, k, n, sf, workers)
	for m := 0; m < n; m++ {
		r.obj[n*k+m] = 1
		row := make([]float64, n*k+n)
		for j := 0; j < k; j++ {
			row[m*k+j] = -coef[m][j]
		}
		row[n*k+m] = 1
		r.rows, r.rhs = append(r.rows, row), append(r.rhs, 0)
		cap1 := make([]float64, n*k+n)
		cap1[n*k+m] = 1
		r.rows, r.rhs = append(r.rows, cap1), append(r.rhs, 1)
	}
	v, _ := r.solve(t)
	return v >= float64(n)*(1-1e-9)
}

// refMaxSum returns max Σ g·X under the base constraints.
func refMaxSum(t *testing.T, g [][]float64, sf, workers []float64) float64 {
	n, k := len(g), len(workers)
	r := refBase(n, k, 0, sf, workers)
	for m := 0; m < n; m++ {
		for j := 0; j < k; j++ {
			r.obj[m*k+j] = g[m][j]
		}
	}
	v, _ := r.solve(t)
	return v
}

// randomProblem draws n jobs on types v100/p100/k80 with Gavel-like throughputs, scale factors
// 1/2/4/8, priorities 1/5, and a cluster of the given size.
func randomProblem(rng *rand.Rand, n int, workers []int) Problem {
	p := Problem{Types: []string{"v100", "p100", "k80"}, Workers: workers, Now: 36000}
	sfs := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}
	for m := 0; m < n; m++ {
		k80 := 0.2 + rng.Float64()*5
		jb := Job{ID: m, ScaleFactor: sfs[rng.Intn(len(sfs))], PriorityWeight: 1,
			Throughput: []float64{k80 * (0.7 + rng.Float64()*10), k80 * (1 + rng.Float64()*4), k80}}
		if rng.Intn(5) == 0 {
			jb.PriorityWeight = 5
		}
		jb.NumStepsTotal = 1e3 + rng.Float64()*1e6
		jb.RemainingSteps = jb.NumStepsTotal * (0.05 + 0.95*rng.Float64())
		jb.TimeSinceStart = rng.Float64() * 1e5
		jb.CumulativeIsolatedTime = jb.TimeSinceStart * rng.Float64()
		p.Jobs = append(p.Jobs, jb)
	}
	return p
}

// checkInvariants asserts X >= 0, rows <= 1 and capacities (with scale factors) respected.
func checkInvariants(t *testing.T, p Problem, x Allocation) {
	t.Helper()
	if len(x) != len(p.Jobs) {
		t.Fatalf("%d rows for %d jobs", len(x), len(p.Jobs))
	}
	used := make([]float64, len(p.Types))
	for m, row := range x {
		if len(row) != len(p.Types) {
			t.Fatalf("job %d: %d columns for %d types", m, len(row), len(p.Types))
		}
		sum := 0.0
		for j, v := range row {
			if !(v >= 0) || v > 1 {
				t.Fatalf("X[%d][%d] = %v, want in [0,1]", m, j, v)
			}
			sum += v
			used[j] += float64(p.Jobs[m].ScaleFactor) * v
		}
		if sum > 1+1e-12 {
			t.Fatalf("row %d sums to %v > 1", m, sum)
		}
	}
	for j, u := range used {
		if u > float64(p.Workers[j])*(1+1e-12) {
			t.Fatalf("type %s: %v GPUs allocated > %d", p.Types[j], u, p.Workers[j])
		}
	}
}

func relDiff(a, b float64) float64 {
	return math.Abs(a-b) / math.Max(1e-12, math.Max(math.Abs(a), math.Abs(b)))
}
