package lp

// sloRelax is how far below r_m/left_m an SLO row may end: the interior-point method needs an
// interior, which an allocation that meets the SLOs exactly does not have. 1e-6 relative is
// below any figure the simulator reports (and looser than nothing ECOS guarantees either).
const sloRelax = 1e-6

// sloRHS is the throughput job m needs to meet its SLO, remaining_m / (deadline_m − now), or 0
// where no constraint applies: no SLO, nothing left to run, or a deadline already passed (Gavel's
// right-hand side is then ≤ 0 and the row always holds; at exactly 0 s left Gavel divides by
// zero, here the row is dropped).
func sloRHS(jb *Job) float64 {
	if !jb.HasSLO || jb.RemainingSteps <= 0 || jb.SLOTimeLeftS <= 0 {
		return 0
	}
	return jb.RemainingSteps / jb.SLOTimeLeftS
}

// solveSumSLOs is Gavel's ThroughputNormalizedByCostSumWithPerfSLOs (max_sum_throughput.py):
// maximise Σ_mj T_mj/price_j·X_mj under the base constraints and, for every job m with an SLO,
// Σ_j T_mj·X_mj >= remaining_m / (deadline_m − now). Where no X meets every SLO, Gavel's cvxpy
// problem is infeasible and it solves again without them; so does this (Solution.SLOsDropped).
//
// Feasibility is decided exactly first, by one max-min LP: the SLOs can all be met iff
// z* = max_X min_{m with an SLO} Σ_j (T_mj/rhs_m)·X_mj >= 1 (a job with an SLO that can run on no
// type with GPUs makes them infeasible). Then the cost LP carries the SLO rows as demand rows
// (jobs without one get a row that always holds, Σ_j T_mj·X_mj >= −1, since the structured LP has
// demand rows on every job or none).
func solveSumSLOs(p *Problem, t [][]float64, prices []float64) (Solution, error) {
	s := newSub(p, t, func(int) bool { return true })
	rhs := make([]float64, len(p.Jobs))
	need := false
	for m := range p.Jobs {
		rhs[m] = sloRHS(&p.Jobs[m])
		need = need || rhs[m] > 0
	}
	if !need || s.empty() {
		return solveSum(p, t, prices)
	}
	ok, lps, err := slosFeasible(p, t, s, rhs)
	if err != nil {
		return Solution{}, err
	}
	if !ok {
		sol, err := solveSum(p, t, prices)
		sol.SLOsDropped, sol.LPSolves = true, sol.LPSolves+lps
		return sol, err
	}
	q := s.newLP(func(m, j int) float64 { return t[m][j] })
	k := len(s.types)
	q.g = make([]float64, len(q.c))
	for i, m := range s.jobs {
		q.b[i] = rhs[m] * (1 - sloRelax)
		if rhs[m] == 0 {
			q.b[i] = -1
		}
		for jj, j := range s.types {
			price := prices[j]
			q.g[i*k+jj] = t[m][j] / price
		}
	}
	scale := infNorm(q.g)
	for i := range q.g {
		q.g[i] /= scale
	}
	sol := Solution{LPSolves: lps}
	res, err := lpSolve(q, &sol)
	if err != nil {
		return Solution{}, err
	}
	sol.X, sol.Objective, sol.Bound = s.expand(res.x), res.primalObj*scale, res.dualObj*scale
	return sol, nil
}

// slosFeasible says whether some allocation meets every SLO: z* >= 1 for the max-min LP over
// the jobs with an SLO (coefficients T_mj/rhs_m), all other jobs at zero.
func slosFeasible(p *Problem, t [][]float64, all sub, rhs []float64) (bool, int, error) {
	inSub := map[int]bool{}
	for _, m := range all.jobs {
		inSub[m] = true
	}
	for m, r := range rhs {
		if r > 0 && !inSub[m] {
			return false, 0, nil // it can run nowhere
		}
	}
	s := newSub(p, t, func(m int) bool { return rhs[m] > 0 })
	q := s.newLP(func(m, j int) float64 { return t[m][j] / rhs[m] })
	q.hasZ = true
	scale := scaleDemand(q)
	var sol Solution
	res, err := lpSolve(q, &sol)
	if err != nil {
		return false, sol.LPSolves, err
	}
	return res.primalObj*scale >= 1, sol.LPSolves, nil
}
