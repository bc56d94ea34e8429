package lp

import (
	"fmt"
	"math"
)

// genLP is a general inequality LP with few rows and many sparse columns:
//
//	maximise  g·x   s.t.  A·x <= b,  x >= 0
//
// A is stored by columns. The packed policies reduce to it (docs/gavel-lp.md, "Space sharing"):
// their rows are per job class and per type (a few hundred at most), their columns per class
// pair, each touching at most five rows. solveGen solves it by Mehrotra's predictor–corrector
// on dense normal equations A·D·Aᵀ (rows × rows, Cholesky).
type genLP struct {
	m    int         // rows
	b    []float64   // m right-hand sides
	g    []float64   // objective per column
	cols [][]nzEntry // per column, its non-zeros
}

type nzEntry struct {
	row int
	v   float64
}

// addCol appends a column and returns its index.
func (q *genLP) addCol(obj float64, nz ...nzEntry) int {
	q.g = append(q.g, obj)
	q.cols = append(q.cols, nz)
	return len(q.cols) - 1
}

// genState is one iterate of the standard form min f·u, [A I]·u = b, u = [x | s] >= 0, with
// duals y and reduced costs w.
type genState struct {
	q            *genLP
	n, m         int
	u, w, f      []float64 // n+m
	y            []float64 // m
	rp, rd       []float64
	du, dw, dy   []float64
	rc, rhs, tmp []float64
	mat          []float64 // m*m normal matrix, then its Cholesky factor
	normB, normF float64
}

// genResult is the primal point and the objective values that certify it.
type genResult struct {
	x                 []float64
	primalObj, dualOb float64
	iterations        int
}

// genTol is the relative tolerance (infeasibilities and gap) at which solveGen stops.
const genTol = 1e-9

// solveGen solves q; deterministic (fixed summation order, one goroutine). Near a degenerate
// optimum the Newton directions lose accuracy and the residuals may climb back up after
// reaching ~1e-8; the best iterate is kept, and returned once it is within ipmAcceptTol and
// five iterations have not improved it.
func solveGen(q *genLP) (genResult, error) {
	st := newGenState(q)
	var best genResult
	bestMerit, bestIt := math.Inf(1), 0
	var pinf, dinf, gap float64
	for it := 0; it < ipmMaxIter; it++ {
		pinf, dinf, gap = st.residuals()
		if pinf < genTol && dinf < genTol && gap < genTol {
			return st.result(it), nil
		}
		if merit := math.Max(pinf, math.Max(dinf, gap)); merit < bestMerit {
			best, bestMerit, bestIt = st.result(it), merit, it
		}
		if bestMerit < ipmAcceptTol && it-bestIt >= 5 {
			return best, nil
		}
		if err := st.step(); err != nil {
			if bestMerit < ipmAcceptTol {
				return best, nil
			}
			return best, fmt.Errorf("%w: %v (primal infeasibility %.2g, dual %.2g, gap %.2g)", errNotConverged, err, pinf, dinf, gap)
		}
	}
	if bestMerit < ipmAcceptTol {
		return best, nil
	}
	return best, fmt.Errorf("%w after %d iterations (best relative residual %.2g)", errNotConverged, ipmMaxIter, bestMerit)
}

func newGenState(q *genLP) *genState {
	n, m := len(q.cols), q.m
	N := n + m
	st := &genState{q: q, n: n, m: m, u: make([]float64, N), w: make([]float64, N), f: make([]float64, N),
		y: make([]float64, m), rp: make([]float64, m), rd: make([]float64, N), du: make([]float64, N),
		dw: make([]float64, N), dy: make([]float64, m), rc: make([]float64, N), rhs: make([]float64, m),
		tmp: make([]float64, N), mat: make([]float64, m*m)}
	for j := 0; j < n; j++ {
		st.f[j] = -q.g[j]
	}
	st.normB, st.normF = infNorm(q.b), infNorm(st.f)
	// Start: x small enough to keep every row with a positive right-hand side feasible, slacks
	// from the rows (at least 1e-2), y = 0, w = 1.
	rowSum := make([]float64, m)
	for _, col := range q.cols {
		for _, e := range col {
			if e.v > 0 {
				rowSum[e.row] += e.v
			}
		}
	}
	x0 := 0.5
	for i, s := range rowSum {
		if s > 0 && q.b[i] > 0 {
			x0 = math.Min(x0, 0.5*q.b[i]/s)
		}
	}
	for j := 0; j < n; j++ {
		st.u[j] = x0
	}
	st.mulA(st.u[:n], st.rhs)
	for i := 0; i < m; i++ {
		st.u[n+i] = math.Max(q.b[i]-st.rhs[i], 1e-2)
	}
	for i := range st.w {
		st.w[i] = 1
	}
	return st
}

// mulA sets out = A·x (x: the structural columns only).
func (st *genState) mulA(x, out []float64) {
	clear(out)
	for j, col := range st.q.cols {
		if x[j] == 0 {
			continue
		}
		for _, e := range col {
			out[e.row] += e.v * x[j]
		}
	}
}

// residuals updates rp = b − A·x − s and rd = f − [A I]ᵀy − w; returns the relative
// infeasibilities and gap.
func (st *genState) residuals() (pinf, dinf, gap float64) {
	n := st.n
	st.mulA(st.u[:n], st.rp)
	for i := range st.rp {
		st.rp[i] = st.q.b[i] - st.rp[i] - st.u[n+i]
	}
	for j, col := range st.q.cols {
		v := st.f[j] - st.w[j]
		for _, e := range col {
			v -= e.v * st.y[e.row]
		}
		st.rd[j] = v
	}
	for i := 0; i < st.m; i++ {
		st.rd[n+i] = -st.y[i] - st.w[n+i]
	}
	pobj, dobj := st.objectives()
	return infNorm(st.rp) / (1 + st.normB), infNorm(st.rd) / (1 + st.normF), math.Abs(pobj-dobj) / (1 + math.Abs(pobj))
}

// objectives returns the maximised primal objective g·x and the dual bound −b·y.
func (st *genState) objectives() (pobj, dobj float64) {
	for j := 0; j < st.n; j++ {
		pobj -= st.f[j] * st.u[j]
	}
	for i, v := range st.y {
		dobj -= st.q.b[i] * v
	}
	return pobj, dobj
}

func (st *genState) result(it int) genResult {
	pobj, dobj := st.objectives()
	return genResult{x: append([]float64(nil), st.u[:st.n]...), primalObj: pobj, dualOb: dobj, iterations: it}
}

// step takes one predictor–corrector step.
func (st *genState) step() error {
	N := st.n + st.m
	if err := st.factor(); err != nil {
		return err
	}
	mu := 0.0
	for i := 0; i < N; i++ {
		mu += st.u[i] * st.w[i]
		st.rc[i] = -st.u[i] * st.w[i]
	}
	mu /= float64(N)
	st.direction()
	ap, ad := st.maxSteps()
	muAff := 0.0
	for i := 0; i < N; i++ {
		muAff += (st.u[i] + ap*st.du[i]) * (st.w[i] + ad*st.dw[i])
	}
	muAff /= float64(N)
	sigma := math.Pow(muAff/mu, 3)
	for i := 0; i < N; i++ {
		st.rc[i] = sigma*mu - st.u[i]*st.w[i] - st.du[i]*st.dw[i]
	}
	st.direction()
	ap, ad = st.maxSteps()
	ap, ad = math.Min(1, 0.995*ap), math.Min(1, 0.995*ad)
	for i := 0; i < N; i++ {
		st.u[i] += ap * st.du[i]
		st.w[i] += ad * st.dw[i]
	}
	for i := range st.y {
		st.y[i] += ad * st.dy[i]
	}
	for i := 0; i < N; i++ {
		if !(st.u[i] > 0) || !(st.w[i] > 0) || math.IsInf(st.u[i], 0) || math.IsInf(st.w[i], 0) {
			return fmt.Errorf("lp: iterate left the positive orthant")
		}
	}
	return nil
}

// maxSteps returns the largest primal and dual steps (uncapped) that keep u and w >= 0.
func (st *genState) maxSteps() (ap, ad float64) {
	ap, ad = math.Inf(1), math.Inf(1)
	for i := range st.u {
		if st.du[i] < 0 {
			ap = math.Min(ap, -st.u[i]/st.du[i])
		}
		if st.dw[i] < 0 {
			ad = math.Min(ad, -st.w[i]/st.dw[i])
		}
	}
	return math.Min(ap, 1), math.Min(ad, 1)
}

// factor forms A·D·Aᵀ + D_s (D = u/w) and factors it by Cholesky; a pivot that vanishes
// (a row whose dual is decided) is replaced by a huge one, so that its component of Δy is 0.
func (st *genState) factor() error {
	m, n := st.m, st.n
	a := st.mat
	clear(a)
	for j, col := range st.q.cols {
		d := st.u[j] / st.w[j]
		for _, e := range col {
			for _, o := range col {
				if o.row <= e.row {
					a[e.row*m+o.row] += d * e.v * o.v
				}
			}
		}
	}
	for i := 0; i < m; i++ {
		a[i*m+i] += st.u[n+i] / st.w[n+i]
	}
	return cholesky(a, m)
}

// cholesky factors the symmetric matrix a (lower triangle used) in place: a = L·Lᵀ.
func cholesky(a []float64, m int) error {
	maxDiag := 0.0
	for i := 0; i < m; i++ {
		maxDiag = math.Max(maxDiag, a[i*m+i])
	}
	if math.IsNaN(maxDiag) || math.IsInf(maxDiag, 0) {
		return fmt.Errorf("lp: normal equations: non-finite entries")
	}
	for c := 0; c < m; c++ {
		d := a[c*m+c]
		for l := 0; l < c; l++ {
			d -= a[c*m+l] * a[c*m+l]
		}
		if !(d > 1e-30*maxDiag) {
			d = 1e128
		}
		d = math.Sqrt(d)
		a[c*m+c] = d
		for r := c + 1; r < m; r++ {
			v := a[r*m+c]
			for l := 0; l < c; l++ {
				v -= a[r*m+l] * a[c*m+l]
			}
			a[r*m+c] = v / d
		}
	}
	return nil
}

// cholSolve solves L·Lᵀ·x = b in place.
func cholSolve(a []float64, m int, x []float64) {
	for i := 0; i < m; i++ {
		v := x[i]
		for l := 0; l < i; l++ {
			v -= a[i*m+l] * x[l]
		}
		x[i] = v / a[i*m+i]
	}
	for i := m - 1; i >= 0; i-- {
		v := x[i]
		for l := i + 1; l < m; l++ {
			v -= a[l*m+i] * x[l]
		}
		x[i] = v / a[i*m+i]
	}
}

// direction solves the Newton system for the complementarity right-hand side rc:
//
//	A·D·Aᵀ·Δy = rp + A·(D·rd) − A·(rc/w),  Δu = D·(Aᵀ·Δy − rd) + rc/w,  Δw = (rc − w·Δu)/u.
func (st *genState) direction() {
	n, m := st.n, st.m
	N := n + m
	for i := 0; i < N; i++ {
		st.tmp[i] = (st.u[i]*st.rd[i] - st.rc[i]) / st.w[i]
	}
	st.mulA(st.tmp[:n], st.dy)
	for i := 0; i < m; i++ {
		st.dy[i] += st.rp[i] + st.tmp[n+i]
	}
	cholSolve(st.mat, m, st.dy)
	for j, col := range st.q.cols {
		v := 0.0
		for _, e := range col {
			v += e.v * st.dy[e.row]
		}
		st.du[j] = (st.u[j]*(v-st.rd[j]) + st.rc[j]) / st.w[j]
	}
	for i := 0; i < m; i++ {
		st.du[n+i] = (st.u[n+i]*(st.dy[i]-st.rd[n+i]) + st.rc[n+i]) / st.w[n+i]
	}
	for i := 0; i < N; i++ {
		st.dw[i] = (st.rc[i] - st.w[i]*st.du[i]) / st.u[i]
	}
}
