package lp

import "math"

// Centring on the optimal face.
//
// The max-min, FTF-probe and makespan LPs are degenerate: only the bottleneck jobs are pinned, and every
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
// with the same normal equations and refinement as the method's own steps. x(μ)
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
	// centreMuFloor is the least complementarity the centring aims at. Below it the slacks that
	// are zero on the whole face (about μ/w) sink under the residuals the method leaves (ipmTol)
	// and the steps stall: agnostic max-min on 2,048 jobs ends at μ = 1.4e-15 and stalls there,
	// centres in 4 steps at 1e-14. The objective moves by at most #columns·μ (1e-10 there).
	centreMuFloor = 1e-14
)

// centre takes centring steps from the converged iterate toward x(μ) at its complementarity
// μ (at least centreMuFloor) and returns how many it took. Primal and dual take the same step,
// the fraction-to-boundary one, halved while it would worsen the centrality; the centring stops
// when no step improves it (the iterate reached, still optimal, is kept; finish checks it).
func (st *ipmState) centre() int {
	u, w := st.u.all, st.w.all
	mu := 0.0
	for i := range u {
		mu += u[i] * w[i]
	}
	mu /= st.nCols
	mu = math.Max(mu, centreMuFloor)
	c := centrality(u, w, nil, nil, 0, mu)
	for it := 0; it < centreMaxSteps; it++ {
		if c < centreTol {
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
		a := math.Min(ap, ad)
		next := centrality(u, w, st.du.all, st.dw.all, a, mu)
		for next > c && a > 1e-3 { // backtrack: a long step can wreck the products u_i·w_i
			a /= 2
			next = centrality(u, w, st.du.all, st.dw.all, a, mu)
		}
		if !(next < c) {
			return it
		}
		for i := range u {
			u[i] += a * st.du.all[i]
			w[i] += a * st.dw.all[i]
		}
		axpyRow(st.y, a, st.dy)
		c = next
	}
	return centreMaxSteps
}

// centrality returns the root mean square of u_i·w_i/μ − 1 at (u + a·du, w + a·dw) (du and dw
// nil: at (u, w)).
func centrality(u, w, du, dw []float64, a, mu float64) float64 {
	s := 0.0
	for i := range u {
		ui, wi := u[i], w[i]
		if du != nil {
			ui, wi = ui+a*du[i], wi+a*dw[i]
		}
		r := ui*wi/mu - 1
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
