package lp

import "math"

// Centring on the optimal face.
//
// The max-min and makespan LPs are degenerate: only the bottleneck jobs are pinned, and every
// point of a large optimal face is optimal. Mehrotra's method reaches the optimum but, with its
// aggressive centring parameter σ = (μ_aff/μ)³ and no neighbourhood of the central path, may
// end anywhere on that face, often near its boundary (time piled on one type, rows near their
// floor). Gavel's solvers (ECOS, cvxopt) end near the central path, whose limit is the face's
// analytic centre: the point that maximises Σ log of every slack (x ≥ 0, rows, capacities,
// demand rows) that is not zero on the whole face. Since the point on the face decides how the
// simulation runs the jobs, the end point is brought there.
//
// After the method has converged (complementarity μ = uᵀw/#columns, about 1e-12), pure centring
// steps (σ = 1, rc = μ·e − u∘w) are Newton steps toward the central-path point x(μ) at that μ,
// with the same normal equations, refinement and step rule as the method's own steps. x(μ)
// lies within O(μ) of the analytic centre of the optimal face, its objective within #columns·μ
// of the optimum (the method's gap tolerance), and the slacks that are zero on the whole face
// (binding demand rows, rows at their ceiling) stay at O(μ) instead of blowing the barrier up.
// For an LP with no objective (the makespan's feasibility problem) every x(μ) is the analytic
// centre of the polytope itself.

const (
	// centreTol is the centrality at which the centring stops: the root mean square of
	// u_i·w_i/μ − 1 over the columns.
	centreTol = 1e-3
	// centreMaxSteps bounds the centring steps of one solve.
	centreMaxSteps = 50
)

// centre takes centring steps from the converged iterate toward x(μ) at its complementarity
// μ and returns how many it took. It stops early when a step fails (the iterate before it,
// still optimal to the method's tolerance, is kept) or when the residuals grow past ipmTol.
func (st *ipmState) centre() int {
	u, w := st.u.all, st.w.all
	mu := 0.0
	for i := range u {
		mu += u[i] * w[i]
	}
	mu /= st.nCols
	for it := 0; it < centreMaxSteps; it++ {
		if centrality(u, w, mu) < centreTol {
			return it
		}
		st.residuals()
		for i := range u {
			st.d.all[i] = math.Min(math.Max(u[i]/w[i], 1e-30), 1e30)
		}
		if st.ne.factor(st.d) != nil {
			return it
		}
		rc := st.tmp.all
		for i := range rc {
			rc[i] = mu - u[i]*w[i]
		}
		st.direction(st.tmp)
		ap, ad := st.maxStep(stepEta)
		if !(ap > 1e-12) || !(ad > 1e-12) {
			return it
		}
		for i := range u {
			u[i] += ap * st.du.all[i]
			w[i] += ad * st.dw.all[i]
		}
		axpyRow(st.y, ad, st.dy)
	}
	return centreMaxSteps
}

// centrality returns the root mean square of u_i·w_i/μ − 1.
func centrality(u, w []float64, mu float64) float64 {
	s := 0.0
	for i := range u {
		r := u[i]*w[i]/mu - 1
		s += r * r
	}
	return math.Sqrt(s / float64(len(u)))
}

// finish returns the result of a converged solve, centred first when p asks for it. A
// centring that leaves the iterate short of ipmAcceptTol (rounding on a hard instance) is
// undone.
func (st *ipmState) finish(it int) ipmResult {
	if !st.p.centre {
		return st.result(it)
	}
	u := append([]float64(nil), st.u.all...)
	w := append([]float64(nil), st.w.all...)
	y := rowVec{R: append([]float64(nil), st.y.R...), Q: append([]float64(nil), st.y.Q...),
		K: append([]float64(nil), st.y.K...)}
	steps := st.centre()
	if pinf, dinf, gap := st.residuals(); !(pinf < ipmAcceptTol && dinf < ipmAcceptTol && gap < ipmAcceptTol) {
		copy(st.u.all, u)
		copy(st.w.all, w)
		copy(st.y.R, y.R)
		copy(st.y.Q, y.Q)
		copy(st.y.K, y.K)
		steps = 0
	}
	res := st.result(it)
	res.centringSteps = steps
	return res
}
