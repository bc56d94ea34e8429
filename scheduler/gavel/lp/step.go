package lp

import (
	"errors"
	"math"
)

// errStalled reports a Newton direction along which no step is possible.
var errStalled = errors.New("lp: interior-point method stalled (step length 0)")

// stepEta is the fraction of the distance to the boundary that a step may cover.
const stepEta = 0.995

// refineSteps bounds the iterative refinement of each Newton direction.
const refineSteps = 4

// step takes one predictor–corrector step from the current iterate.
func (st *ipmState) step() error {
	u, w, d := st.u.all, st.w.all, st.d.all
	mu := 0.0
	for i := range u {
		mu += u[i] * w[i]
		// D = u/w, kept inside [1e-30, 1e30] so that a reduced cost or slack that underflows
		// cannot turn the normal equations into inf/NaN.
		d[i] = math.Min(math.Max(u[i]/w[i], 1e-30), 1e30)
	}
	mu /= st.nCols
	if err := st.ne.factor(st.d); err != nil {
		return err
	}
	// Predictor (affine scaling): rc = −u∘w.
	rc := st.tmp.all
	for i := range rc {
		rc[i] = -u[i] * w[i]
	}
	st.direction(st.tmp)
	ap, ad := st.maxStep(1)
	du, dw := st.du.all, st.dw.all
	muAff := 0.0
	for i := range u {
		muAff += (u[i] + ap*du[i]) * (w[i] + ad*dw[i])
	}
	muAff /= st.nCols
	sigma := math.Pow(muAff/mu, 3)
	// Corrector: rc = σμ − u∘w − Δu_aff∘Δw_aff.
	for i := range rc {
		rc[i] = sigma*mu - u[i]*w[i] - du[i]*dw[i]
	}
	st.direction(st.tmp)
	ap, ad = st.maxStep(stepEta)
	if !(ap > 1e-12) || !(ad > 1e-12) {
		return errStalled
	}
	for i := range u {
		u[i] += ap * du[i]
		w[i] += ad * dw[i]
	}
	axpyRow(st.y, ad, st.dy)
	return nil
}

// direction solves the Newton system for complementarity right-hand side rc and leaves the
// step in du, dy, dw, with up to refineSteps of iterative refinement on the normal equations.
func (st *ipmState) direction(rc colVec) {
	p := st.p
	r, w, d, rd, du, dw := rc.all, st.w.all, st.d.all, st.rd.all, st.du.all, st.dw.all
	// h = rp − A·(rc/w − D∘rd), the temporary kept in du.
	for i := range du {
		du[i] = r[i]/w[i] - d[i]*rd[i]
	}
	p.mulA(st.du, st.h)
	axpyRow(st.h, -1, st.rp)
	scaleRow(st.h, -1)
	solveRefined(p, st.ne, st.d, st.h, st.dy, st.hres, st.dw)
	// dw = rd − Aᵀ·dy; du = rc/w − D∘dw.
	p.mulAT(st.dy, st.dw)
	for i := range dw {
		dw[i] = rd[i] - dw[i]
		du[i] = r[i]/w[i] - d[i]*dw[i]
	}
	exactSlackSteps(p, st.du, st.rp, st.hres)
}

// solveRefined sets y to the solution of (A·D·Aᵀ)·y = h with ne (factored for d), then runs up
// to refineSteps of iterative refinement, hres = h − (A·D·Aᵀ)·y; y += solve(hres), while the
// residual shrinks. hres and work are scratch.
func solveRefined(p *structLP, ne *normalEq, d colVec, h, y, hres rowVec, work colVec) {
	ne.solve(h, y)
	prev := math.Inf(1)
	for it := 0; it < refineSteps; it++ {
		p.mulAT(y, work)
		for i := range work.all {
			work.all[i] *= d.all[i]
		}
		p.mulA(work, hres)
		axpyRow(hres, -1, h)
		scaleRow(hres, -1)
		res := rowNorm(hres)
		if res <= 1e-15*rowNorm(h) || res >= prev {
			break
		}
		prev = res
		ne.solve(hres, hres)
		axpyRow(y, 1, hres)
	}
}

// exactSlackSteps recomputes the slack steps of du from the constraint rows, so that A·Δu = rp
// holds to rounding whatever the accuracy of the normal-equation solve: every row has its own
// slack with coefficient 1. In the interior-point method the small error moves to the slacks'
// complementarity, which the next iteration targets afresh (primal infeasibility no longer
// drifts near degenerate optima). tmp is scratch.
func exactSlackSteps(p *structLP, du colVec, rp, tmp rowVec) {
	clear(du.sR)
	clear(du.sK)
	if p.anyDem() {
		clear(du.sQ)
	}
	p.mulA(du, tmp) // activities of Δx and Δz alone
	for m := 0; m < p.n; m++ {
		du.sR[m] = rp.R[m] - tmp.R[m]
		if p.dem[m] {
			du.sQ[m] = rp.Q[m] - tmp.Q[m]
		}
	}
	for j := range du.sK {
		du.sK[j] = rp.K[j] - tmp.K[j]
	}
}

// maxStep returns the primal and dual step lengths (at most 1) that keep u and w positive,
// each shortened by the factor eta.
func (st *ipmState) maxStep(eta float64) (ap, ad float64) {
	ap, ad = 1/eta, 1/eta
	u, w, du, dw := st.u.all, st.w.all, st.du.all, st.dw.all
	for i := range u {
		if du[i] < 0 {
			ap = math.Min(ap, -u[i]/du[i])
		}
		if dw[i] < 0 {
			ad = math.Min(ad, -w[i]/dw[i])
		}
	}
	return math.Min(1, eta*ap), math.Min(1, eta*ad)
}

func axpyRow(y rowVec, a float64, x rowVec) {
	for i := range y.R {
		y.R[i] += a * x.R[i]
		y.Q[i] += a * x.Q[i]
	}
	for j := range y.K {
		y.K[j] += a * x.K[j]
	}
}

func scaleRow(y rowVec, a float64) {
	for i := range y.R {
		y.R[i] *= a
		y.Q[i] *= a
	}
	for j := range y.K {
		y.K[j] *= a
	}
}

func rowNorm(r rowVec) float64 {
	return math.Max(math.Max(infNorm(r.R), infNorm(r.Q)), infNorm(r.K))
}
