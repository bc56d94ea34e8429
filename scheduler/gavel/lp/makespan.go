package lp

import "fmt"

// Gavel's makespan search (min_total_duration.py, MinTotalDurationPolicyWithPerf): bisect T
// in [100 s, 10⁶ s], stopping when 1.05·min_T >= max_T; when no T there is feasible, move to
// [10⁶, 10⁷], [10⁷, 10⁸], ... The allocation is the one found feasible at the smallest T probed.
const (
	makespanMinT   = 100.0
	makespanMaxT   = 1e6
	makespanFactor = 1.05
)

// gavelSearch replays Gavel's binary search with the given feasibility oracle and returns the
// smallest feasible T it probes and the number of probes.
func gavelSearch(feasible func(T float64) bool) (float64, int, error) {
	minT, maxT, lastMaxT := makespanMinT, makespanMaxT, makespanMaxT
	best, found, probes := 0.0, false, 0
	for !found {
		for makespanFactor*minT < maxT {
			T := (minT + maxT) / 2
			probes++
			if feasible(T) {
				found, best, maxT = true, T, T
			} else {
				minT = T
			}
		}
		maxT, minT = lastMaxT*10, lastMaxT
		lastMaxT *= 10
		if lastMaxT > 1e300 {
			return 0, probes, fmt.Errorf("lp: makespan search found no feasible T below 1e300 s")
		}
	}
	return best, probes, nil
}

// solveMakespan is Gavel's min_total_duration(_perf). A probe "can every job finish its
// remaining steps within T", i.e. ∃X: Σ_j T_mj·X_mj >= remaining_m / T, holds exactly when
// T >= T* = 1/z* with z* = max_X min_m Σ_j (T_mj/remaining_m)·X_mj, a max-min LP. So one LP
// gives z*, Gavel's search is replayed against T >= T* (same probes, same final T), and one
// more LP returns the analytic centre of Gavel's last feasibility problem (its "maximize 1" LP
// at the final T), near which Gavel's interior-point solver ends (centre.go).
// Jobs with no remaining steps, or that cannot run anywhere (Gavel's search never ends then),
// get zero rows.
func solveMakespan(p *Problem, t [][]float64) (Solution, error) {
	s := newSub(p, t, func(m int) bool { return p.Jobs[m].RemainingSteps > 0 })
	if s.empty() {
		return Solution{X: zeroAllocation(len(p.Jobs), len(p.Types))}, nil
	}
	coef := func(m, j int) float64 { return t[m][j] / p.Jobs[m].RemainingSteps }
	q := s.newLP(coef)
	q.hasZ = true
	scale := scaleDemand(q)
	var sol Solution
	res, err := lpSolve(q, &sol)
	if err != nil {
		return Solution{}, err
	}
	zStar := res.primalObj * scale
	if !(zStar > 0) {
		return Solution{}, fmt.Errorf("lp: makespan: max-min LP ended at %v (%s)", zStar, sol.Warning)
	}
	tStar := 1 / zStar
	tFinal, _, err := gavelSearch(func(T float64) bool { return T*zStar >= 1-1e-9 })
	if err != nil {
		return Solution{}, err
	}
	sol.X, sol.Objective, sol.Bound = s.expand(res.x), tFinal, tStar
	if tFinal*zStar <= 1+1e-6 {
		// At T* exactly, Gavel's feasible set is the max-min optimal face: solved again with
		// centring (rare: the final probe falls on T*).
		q.centre = true
		sol.LPSolves++
		if cr, err := solveIPM(q); err == nil {
			sol.X, sol.CentringSteps = s.expand(cr.x), cr.centringSteps
		}
		return sol, nil
	}
	// Gavel's final feasibility LP: Σ_j (T_mj·T/remaining_m)·X_mj >= 1, no objective; with no
	// objective every central-path point is the polytope's analytic centre.
	f := s.newLP(func(m, j int) float64 { return coef(m, j) * tFinal })
	for i := range f.b {
		f.b[i] = 1
	}
	f.centre = true
	sol.LPSolves++
	if fr, err := solveIPM(f); err == nil {
		sol.X, sol.CentringSteps = s.expand(fr.x), fr.centringSteps
	}
	return sol, nil
}
