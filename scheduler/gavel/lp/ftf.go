package lp

import "math"

// ftfRelTol is the relative width of the final ρ bracket of the finish-time-fairness bisection.
const ftfRelTol = 1e-9

// ftfMaxProbes bounds the bisection (each probe is one LP).
const ftfMaxProbes = 100

// solveFTF is Gavel's FinishTimeFairnessPolicyWithPerf (finish_time_fairness.py): minimise
// max_m ρ_m(X), ρ_m = (t_m + r_m / Σ_j T_mj·X_mj) / (c_m + r_m / iso_m), with t_m the time since
// start, r_m the remaining steps, c_m the cumulative isolated time and iso_m the isolated
// throughput. Priority weights are not used (Gavel's TODO).
//
// Exact by bisection over LP feasibility: ρ_m(X) <= ρ ⟺ Σ_j T_mj·X_mj >= r_m / (ρ·E_m − t_m)
// (E_m = c_m + r_m/iso_m, when ρ·E_m > t_m), a linear constraint, and the set of ρ for which
// some X in the base polytope satisfies it for all m is an interval [ρ*, ∞) because its
// right-hand side decreases in ρ. So min max ρ_m = the smallest feasible ρ: the same optimum as
// Gavel's inv_pos program. Feasibility at ρ is the max-min LP with c_mj = T_mj(ρE_m − t_m)/r_m
// reaching a level z >= 1; the root of z(ρ) = 1 is bracketed and found by Illinois regula falsi
// (bisection where the interpolation leaves the bracket). Every feasible probe's X gives an
// achieved ρ (<= the probe): the best one is returned, with it as Objective. Jobs with no remaining steps or that cannot run get zero rows.
func solveFTF(p *Problem, t [][]float64) (Solution, error) {
	iso := isolatedThroughputs(t, p)
	s := newSub(p, t, func(m int) bool { return p.Jobs[m].RemainingSteps > 0 && iso[m] > 0 })
	if s.empty() {
		return Solution{X: zeroAllocation(len(p.Jobs), len(p.Types))}, nil
	}
	f := newFTF(p, t, s, iso)
	sol := Solution{X: f.isolated(), Objective: f.hi, Bound: f.lo}
	zlo, zhi := math.NaN(), math.NaN() // max-min levels at the bracket ends (1 = just feasible)
	side := 0
	for sol.LPSolves < ftfMaxProbes && math.Min(f.hi, sol.Objective)-f.lo > ftfRelTol*f.hi {
		rho := f.next(zlo, zhi)
		x, z, err := f.probe(rho, &sol)
		if err != nil {
			return Solution{}, err
		}
		// Illinois regula falsi on g(ρ) = z(ρ) − 1: the end kept twice in a row has its g halved.
		if z < 1 {
			f.lo, zlo = rho, z
			if side < 0 {
				zhi = 1 + (zhi-1)/2
			}
			side = -1
			continue
		}
		f.hi, zhi = rho, z
		if side > 0 {
			zlo = 1 + (zlo-1)/2
		}
		side = 1
		if a := f.achieved(x); a < sol.Objective {
			sol.X, sol.Objective = x, a
		}
	}
	sol.Objective, sol.Bound = math.Max(sol.Objective, f.lo), f.lo
	return sol, nil
}

// next returns the next ρ to probe: the regula-falsi point when both ends' levels are known
// and it lies strictly inside the bracket, else the midpoint.
func (f *ftf) next(zlo, zhi float64) float64 {
	if zhi > zlo {
		rho := f.lo + (1-zlo)*(f.hi-f.lo)/(zhi-zlo)
		if rho > f.lo && rho < f.hi {
			return rho
		}
	}
	return (f.lo + f.hi) / 2
}

// ftf holds one finish-time-fairness problem: per selected job its E_m and the ρ bracket.
type ftf struct {
	p      *Problem
	t      [][]float64
	s      sub
	e      []float64 // per selected job: c_m + r_m/iso_m
	lo, hi float64
}

func newFTF(p *Problem, t [][]float64, s sub, iso []float64) *ftf {
	f := &ftf{p: p, t: t, s: s, e: make([]float64, len(s.jobs))}
	for i, m := range s.jobs {
		jb := &p.Jobs[m]
		f.e[i] = jb.CumulativeIsolatedTime + jb.RemainingSteps/iso[m]
		best := 0.0
		for _, j := range s.types {
			best = math.Max(best, t[m][j])
		}
		// No allocation beats the whole row on the fastest type: a lower bound on ρ*.
		f.lo = math.Max(f.lo, (jb.TimeSinceStart+jb.RemainingSteps/best)/f.e[i])
		// The isolated allocation is feasible and gives iso_m: an upper bound.
		f.hi = math.Max(f.hi, (jb.TimeSinceStart+jb.RemainingSteps/iso[m])/f.e[i])
	}
	return f
}

// probe solves the max-min LP at ρ and returns its level z: every job reaches its ρ-demand
// (ρ is feasible) when z >= 1. Its X is centred on the LP's optimal face (centre.go): near
// where Gavel's solver ends, and a better achieved ρ, which closes the bracket in fewer probes.
func (f *ftf) probe(rho float64, sol *Solution) (Allocation, float64, error) {
	q := f.s.newLP(func(int, int) float64 { return 0 })
	k := len(f.s.types)
	for i, m := range f.s.jobs {
		jb := &f.p.Jobs[m]
		w := (rho*f.e[i] - jb.TimeSinceStart) / jb.RemainingSteps
		for jj, j := range f.s.types {
			q.c[i*k+jj] = f.t[m][j] * w
		}
	}
	q.hasZ, q.centre = true, true
	scale := scaleDemand(q)
	res, err := lpSolve(q, sol)
	if err != nil {
		return nil, 0, err
	}
	sol.CentringSteps += res.centringSteps
	return f.s.expand(res.x), res.primalObj * scale, nil
}

// achieved returns max_m ρ_m(X) over the selected jobs.
func (f *ftf) achieved(x Allocation) float64 {
	worst := 0.0
	for i, m := range f.s.jobs {
		jb := &f.p.Jobs[m]
		tp := 0.0
		for _, j := range f.s.types {
			tp += f.t[m][j] * x[m][j]
		}
		if tp <= 0 {
			return math.Inf(1)
		}
		worst = math.Max(worst, (jb.TimeSinceStart+jb.RemainingSteps/tp)/f.e[i])
	}
	return worst
}

// isolated returns Gavel's isolated allocation for the selected jobs (its fallback).
func (f *ftf) isolated() Allocation {
	p := f.p
	out := zeroAllocation(len(p.Jobs), len(p.Types))
	n := float64(len(p.Jobs))
	for _, m := range f.s.jobs {
		sf := float64(p.Jobs[m].ScaleFactor)
		sum := 0.0
		for j := range p.Types {
			out[m][j] = float64(p.Workers[j]) / n / sf
			sum += out[m][j]
		}
		if sum > 1 {
			for j := range p.Types {
				out[m][j] /= sum
			}
		}
	}
	return out
}
