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
	p := st.p
	mu := 0.0
	p.forEachCol(st.u, st.w, func(u, w *float64) { mu += *u * *w })
	mu /= st.nCols
	// D = u/w, kept inside [1e-30, 1e30] so that a reduced cost or slack that underflows
	// cannot turn the normal equations into inf/NaN.
	st.eachCol3(st.d, st.u, st.w, func(d, u, w *float64) { *d = math.Min(math.Max(*u / *w, 1e-30), 1e30) })
	if err := st.ne.factor(st.d); err != nil {
		return err
	}
	// Predictor (affine scaling): rc = −u∘w.
	st.eachCol3(st.tmp, st.u, st.w, func(rc, u, w *float64) { *rc = -*u * *w })
	st.direction(st.tmp)
	ap, ad := st.maxStep(1)
	muAff := 0.0
	st.eachCol4(st.u, st.w, st.du, st.dw, func(u, w, du, dw *float64) {
		muAff += (*u + ap**du) * (*w + ad**dw)
	})
	muAff /= st.nCols
	sigma := math.Pow(muAff/mu, 3)
	copyCol(st.du2, st.du)
	copyCol(st.dw2, st.dw)
	// Corrector: rc = σμ − u∘w − Δu_aff∘Δw_aff.
	st.corrRHS(sigma * mu)
	st.direction(st.tmp)
	ap, ad = st.maxStep(stepEta)
	if !(ap > 1e-12) || !(ad > 1e-12) {
		return errStalled
	}
	st.eachCol3(st.u, st.du, st.du, func(u, du, _ *float64) { *u += ap * *du })
	st.eachCol3(st.w, st.dw, st.dw, func(w, dw, _ *float64) { *w += ad * *dw })
	for m := range st.y.R {
		st.y.R[m] += ad * st.dy.R[m]
		st.y.Q[m] += ad * st.dy.Q[m]
	}
	for j := range st.y.K {
		st.y.K[j] += ad * st.dy.K[j]
	}
	return nil
}

// corrRHS sets tmp = target − u∘w − Δu_aff∘Δw_aff.
func (st *ipmState) corrRHS(target float64) {
	st.eachCol5(st.tmp, st.u, st.w, st.du2, st.dw2, func(rc, u, w, du, dw *float64) {
		*rc = target - *u**w - *du**dw
	})
}

// direction solves the Newton system for complementarity right-hand side rc (in st.tmp) and
// leaves the step in du, dy, dw. One step of iterative refinement on the normal equations.
func (st *ipmState) direction(rc colVec) {
	p := st.p
	// tmp2 = rc/w − D∘rd, kept in du; h = rp − A·tmp2.
	st.eachCol5(st.du, rc, st.w, st.d, st.rd, func(t, rc, w, d, rd *float64) { *t = *rc / *w - *d**rd })
	p.mulA(st.du, st.h)
	axpyRow(st.h, -1, st.rp) // h = A·t − rp
	scaleRow(st.h, -1)       // h = rp − A·t
	st.ne.solve(st.h, st.dy)
	// Iterative refinement: hres = h − (A·D·Aᵀ)·dy; dy += solve(hres), until it stops improving.
	prev := math.Inf(1)
	for r := 0; r < refineSteps; r++ {
		p.mulAT(st.dy, st.dw)
		st.eachCol3(st.dw, st.d, st.d, func(v, d, _ *float64) { *v *= *d })
		p.mulA(st.dw, st.hres)
		axpyRow(st.hres, -1, st.h)
		scaleRow(st.hres, -1)
		res := rowNorm(st.hres)
		if res <= 1e-15*rowNorm(st.h) || res >= prev {
			break
		}
		prev = res
		st.ne.solve(st.hres, st.hres)
		axpyRow(st.dy, 1, st.hres)
	}
	// dw = rd − Aᵀ·dy; du = rc/w − D∘dw.
	p.mulAT(st.dy, st.dw)
	st.eachCol3(st.dw, st.rd, st.rd, func(dw, rd, _ *float64) { *dw = *rd - *dw })
	st.eachCol5(st.du, rc, st.w, st.d, st.dw, func(du, rc, w, d, dw *float64) { *du = *rc / *w - *d**dw })
}

// maxStep returns the primal and dual step lengths (at most 1) that keep u and w positive,
// each shortened by the factor eta.
func (st *ipmState) maxStep(eta float64) (ap, ad float64) {
	ap, ad = 1/eta, 1/eta
	st.eachCol4(st.u, st.w, st.du, st.dw, func(u, w, du, dw *float64) {
		if *du < 0 {
			ap = math.Min(ap, -*u / *du)
		}
		if *dw < 0 {
			ad = math.Min(ad, -*w / *dw)
		}
	})
	return math.Min(1, eta*ap), math.Min(1, eta*ad)
}

// eachCol3/4/5 visit the existing columns of several column vectors together.
func (st *ipmState) eachCol3(a, b, c colVec, fn func(a, b, c *float64)) {
	st.eachCol5(a, b, c, c, c, func(a, b, c, _, _ *float64) { fn(a, b, c) })
}

func (st *ipmState) eachCol4(a, b, c, d colVec, fn func(a, b, c, d *float64)) {
	st.eachCol5(a, b, c, d, d, func(a, b, c, d, _ *float64) { fn(a, b, c, d) })
}

func (st *ipmState) eachCol5(a, b, c, d, e colVec, fn func(a, b, c, d, e *float64)) {
	p := st.p
	for i := range a.x {
		fn(&a.x[i], &b.x[i], &c.x[i], &d.x[i], &e.x[i])
	}
	if p.hasZ {
		fn(&a.z[0], &b.z[0], &c.z[0], &d.z[0], &e.z[0])
	}
	for m := 0; m < p.n; m++ {
		fn(&a.sR[m], &b.sR[m], &c.sR[m], &d.sR[m], &e.sR[m])
		if p.dem[m] {
			fn(&a.sQ[m], &b.sQ[m], &c.sQ[m], &d.sQ[m], &e.sQ[m])
		}
	}
	for j := range a.sK {
		fn(&a.sK[j], &b.sK[j], &c.sK[j], &d.sK[j], &e.sK[j])
	}
}

func copyCol(dst, src colVec) {
	copy(dst.x, src.x)
	dst.z[0] = src.z[0]
	copy(dst.sR, src.sR)
	copy(dst.sQ, src.sQ)
	copy(dst.sK, src.sK)
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

func rowNorm(r rowVec) float64 { return math.Max(math.Max(infNorm(r.R), infNorm(r.Q)), infNorm(r.K)) }
