package lp

import (
	"fmt"
	"math"
)

// ipmState is one iterate (u primal columns, y duals, w reduced costs) and its work vectors.
type ipmState struct {
	p            *structLP
	u, w         colVec
	y            rowVec
	f            colVec // cost
	r            rowVec // right-hand side
	rp           rowVec // primal residual r − A·u
	rd           colVec // dual residual f − Aᵀy − w
	d            colVec // u/w
	du, dw, tmp  colVec
	dy, h, hres  rowVec
	ne           *normalEq
	nCols        float64
	normR, normF float64
}

const ipmMaxIter = 200

// ipmAcceptTol is the looser tolerance at which an iterate is still returned when the Newton
// system breaks down (near-degenerate vertices) before ipmTol is reached. ECOS, Gavel's solver,
// stops at 1e-8 (feastol, reltol) by default.
const ipmAcceptTol = 1e-7

// regLevels are the job-block regularisations tried in turn: the smallest first (most
// accurate), larger ones when the Newton systems of a near-degenerate problem break down.
var regLevels = []float64{1e-11, 1e-8, 1e-6}

// solveIPM solves p with Mehrotra's predictor–corrector primal–dual interior-point method
// (Wright, "Primal-Dual Interior-Point Methods", 1997, ch. 10), using normalEq for the
// Newton systems. It is deterministic: no randomness, fixed summation order, one goroutine.
// When every regularisation level fails, it returns the iterate with the smallest residuals
// and an error wrapping errNotConverged (as Gavel goes on with a non-optimal cvxpy result).
func solveIPM(p *structLP) (ipmResult, error) {
	if err := p.check(); err != nil {
		return ipmResult{}, err
	}
	if p.zc == nil {
		p.equilibrate()
	}
	var best ipmResult
	var bestErr error
	bestMerit := math.Inf(1)
	levels := regLevels
	if p.maxIter > 0 {
		levels = regLevels[:1] // a capped solve (water filling) takes its best point, no retries
	}
	for _, reg := range levels {
		res, merit, err := runIPM(p, reg)
		if err == nil {
			return res, nil
		}
		if merit < bestMerit {
			best, bestErr, bestMerit = res, err, merit
		}
	}
	return best, bestErr
}

// runIPM runs the method with one regularisation level. On failure it returns the last
// iterate and its merit (the largest of the three relative residuals).
func runIPM(p *structLP, reg float64) (ipmResult, float64, error) {
	st := newIPMState(p)
	st.ne.reg = reg
	st.start()
	gapTol := ipmTol
	if p.gapTol > 0 {
		gapTol = p.gapTol
	}
	maxIter := ipmMaxIter
	if p.maxIter > 0 {
		maxIter = p.maxIter
	}
	var pinf, dinf, gap float64
	for it := 0; it < maxIter; it++ {
		pinf, dinf, gap = st.residuals()
		if pinf < ipmTol && dinf < ipmTol && gap < gapTol {
			return st.finish(it), 0, nil
		}
		if err := st.step(); err != nil {
			if pinf < ipmAcceptTol && dinf < ipmAcceptTol && gap < math.Max(ipmAcceptTol, gapTol) {
				return st.result(it), 0, nil // the Newton system broke down at an already optimal point
			}
			st.residuals()
			return st.result(it), math.Max(pinf, math.Max(dinf, gap)),
				fmt.Errorf("%w: %v (primal infeasibility %.2g, dual %.2g, gap %.2g)", errNotConverged, err, pinf, dinf, gap)
		}
	}
	pinf, dinf, gap = st.residuals()
	merit := math.Max(pinf, math.Max(dinf, gap))
	if merit < math.Max(ipmAcceptTol, gapTol) {
		return st.result(maxIter), 0, nil
	}
	return st.result(maxIter), merit, fmt.Errorf("%w after %d iterations (primal infeasibility %.2g, dual %.2g, gap %.2g)",
		errNotConverged, maxIter, pinf, dinf, gap)
}

func newIPMState(p *structLP) *ipmState {
	n, k := p.n, p.k
	st := &ipmState{p: p,
		u: newCol(p), w: newCol(p), f: newCol(p), rd: newCol(p), d: newCol(p),
		du: newCol(p), dw: newCol(p), tmp: newCol(p),
		y: newRow(n, k), r: newRow(n, k), rp: newRow(n, k), dy: newRow(n, k), h: newRow(n, k), hres: newRow(n, k),
		ne: newNormalEq(p), nCols: float64(p.numCols()),
	}
	p.cost(st.f)
	p.rhs(st.r)
	st.normF = math.Max(infNorm(st.f.x), math.Abs(st.f.z[0]))
	st.normR = math.Max(math.Max(infNorm(st.r.R), infNorm(st.r.Q)), infNorm(st.r.K))
	return st
}

// start sets a strictly positive, primal-feasible-where-cheap starting point: x uniform and
// small enough to respect every row and capacity, slacks from the constraints, y = 0, w = 1.
func (st *ipmState) start() {
	p, k := st.p, st.p.k
	sumA := make([]float64, k)
	for m := 0; m < p.n; m++ {
		for j := 0; j < k; j++ {
			sumA[j] += p.a[m*k+j]
		}
	}
	x0 := 0.5 / float64(k)
	for _, s := range sumA {
		if s > 0 {
			x0 = math.Min(x0, 0.5/s)
		}
	}
	for i := range st.u.x {
		st.u.x[i] = x0
	}
	st.p.mulA(st.u, st.h) // row activities of x alone (z and slacks are still 0)
	minQ := math.Inf(1)
	for m := 0; m < p.n; m++ {
		st.u.sR[m] = math.Max(1-st.h.R[m], 1e-2)
		if p.dem[m] && p.zCoef(m) > 0 { // rows without z (water filling's frozen jobs) do not bound it
			minQ = math.Min(minQ, (-st.h.Q[m]-p.b[m])/p.zCoef(m)) // (c·x − b)/zc
		}
	}
	if p.hasZ {
		// Primal feasible from the start when b = 0 (the max-min problems): z at half the
		// smallest level and each demand slack exactly what is left.
		st.u.z[0] = 0.5 * minQ
		if !(st.u.z[0] > 0) {
			st.u.z[0] = 1e-2
		}
	}
	for m := 0; m < p.n; m++ {
		if p.dem[m] {
			sq := -st.h.Q[m] - p.b[m]
			if p.hasZ {
				sq -= p.zCoef(m) * st.u.z[0]
			}
			if !(sq > 0) {
				sq = 1e-2
			}
			st.u.sQ[m] = sq
		}
	}
	for j := 0; j < k; j++ {
		st.u.sK[j] = math.Max(1-st.h.K[j], 1e-2)
	}
	for i := range st.w.all {
		st.w.all[i] = 1
	}
}

// residuals updates rp and rd and returns the relative primal and dual infeasibilities and gap.
func (st *ipmState) residuals() (pinf, dinf, gap float64) {
	p := st.p
	p.mulA(st.u, st.rp)
	for i := range st.rp.R {
		st.rp.R[i] = st.r.R[i] - st.rp.R[i]
		st.rp.Q[i] = st.r.Q[i] - st.rp.Q[i]
	}
	for j := range st.rp.K {
		st.rp.K[j] = st.r.K[j] - st.rp.K[j]
	}
	p.mulAT(st.y, st.rd)
	st.rd.x = sub3(st.rd.x, st.f.x, st.w.x)
	st.rd.z[0] = st.f.z[0] - st.rd.z[0] - st.w.z[0]
	st.rd.sR = sub3(st.rd.sR, st.f.sR, st.w.sR)
	st.rd.sQ = sub3(st.rd.sQ, st.f.sQ, st.w.sQ)
	st.rd.sK = sub3(st.rd.sK, st.f.sK, st.w.sK)
	pinf = math.Max(math.Max(infNorm(st.rp.R), infNorm(st.rp.Q)), infNorm(st.rp.K)) / (1 + st.normR)
	dinf = math.Max(math.Max(infNorm(st.rd.x), math.Abs(st.rd.z[0])),
		math.Max(math.Max(infNorm(st.rd.sR), infNorm(st.rd.sQ)), infNorm(st.rd.sK))) / (1 + st.normF)
	pobj, dobj := st.objectives()
	gap = math.Abs(pobj-dobj) / (1 + math.Abs(pobj))
	return pinf, dinf, gap
}

// sub3 sets out[i] = f[i] − out[i] − w[i] (out holds Aᵀy on entry).
func sub3(out, f, w []float64) []float64 {
	for i := range out {
		out[i] = f[i] - out[i] - w[i]
	}
	return out
}

// objectives returns the maximisation objective of u and the dual bound of y.
func (st *ipmState) objectives() (pobj, dobj float64) {
	for i, v := range st.u.x {
		pobj -= st.f.x[i] * v
	}
	pobj -= st.f.z[0] * st.u.z[0]
	for m := range st.r.R {
		dobj -= st.r.R[m]*st.y.R[m] + st.r.Q[m]*st.y.Q[m]
	}
	for j := range st.r.K {
		dobj -= st.r.K[j] * st.y.K[j]
	}
	return pobj, dobj
}

func (st *ipmState) result(it int) ipmResult {
	pobj, dobj := st.objectives()
	x := make([]float64, len(st.u.x))
	copy(x, st.u.x)
	res := ipmResult{x: x, z: st.u.z[0], primalObj: pobj, dualObj: dobj, iterations: it}
	if st.p.anyDem() {
		res.sQ = append([]float64(nil), st.u.sQ...)
		res.lamQ = append([]float64(nil), st.w.sQ...)
	}
	return res
}
