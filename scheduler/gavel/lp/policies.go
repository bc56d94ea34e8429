package lp

import (
	"errors"
	"math"
)

// lpSolve runs the interior-point method and separates a non-optimal but usable end point
// (returned with a warning, as Gavel goes on after cvxpy's "not optimal") from a failure.
func lpSolve(q *structLP, sol *Solution) (ipmResult, error) {
	sol.LPSolves++
	res, err := solveIPM(q)
	if err != nil && errors.Is(err, errNotConverged) && res.x != nil {
		sol.Warning = err.Error()
		return res, nil
	}
	return res, err
}

// sub is the part of a Problem that takes part in one LP: the jobs that can run and the types
// that have workers. Other jobs get zero rows and other types zero columns.
type sub struct {
	p     *Problem
	jobs  []int // indices into p.Jobs
	types []int // indices into p.Types, workers > 0
}

// newSub selects the types with workers and the jobs for which keep(m) holds and that have a
// positive throughput on one of those types.
func newSub(p *Problem, t [][]float64, keep func(m int) bool) sub {
	s := sub{p: p}
	for j, w := range p.Workers {
		if w > 0 {
			s.types = append(s.types, j)
		}
	}
	for m := range p.Jobs {
		runs := false
		for _, j := range s.types {
			runs = runs || t[m][j] > 0
		}
		if runs && keep(m) {
			s.jobs = append(s.jobs, m)
		}
	}
	return s
}

func (s sub) empty() bool { return len(s.jobs) == 0 || len(s.types) == 0 }

// newLP returns the LP skeleton (base constraints) over s, with coef(m, j) as the demand
// coefficient of each entry and every demand row switched on.
func (s sub) newLP(coef func(m, j int) float64) *structLP {
	n, k := len(s.jobs), len(s.types)
	q := &structLP{n: n, k: k, a: make([]float64, n*k), dem: make([]bool, n),
		c: make([]float64, n*k), b: make([]float64, n)}
	for i, m := range s.jobs {
		sf := float64(s.p.Jobs[m].ScaleFactor)
		q.dem[i] = true
		for jj, j := range s.types {
			q.a[i*k+jj] = sf / float64(s.p.Workers[j])
			q.c[i*k+jj] = coef(m, j)
		}
	}
	return q
}

// scaleDemand divides every demand coefficient by the largest one and returns that factor.
func scaleDemand(q *structLP) float64 {
	mx := infNorm(q.c)
	if mx > 0 {
		for i := range q.c {
			q.c[i] /= mx
		}
	}
	return mx
}

// expand maps an LP solution back to a full allocation: entries clipped to [0, 1] as Gavel does,
// then any row or capacity that rounding left over its limit scaled down onto it.
func (s sub) expand(x []float64) Allocation {
	p, k := s.p, len(s.types)
	out := zeroAllocation(len(p.Jobs), len(p.Types))
	for i, m := range s.jobs {
		sum := 0.0
		for jj, j := range s.types {
			v := math.Min(math.Max(x[i*k+jj], 0), 1)
			out[m][j] = v
			sum += v
		}
		if sum > 1 {
			for _, j := range s.types {
				out[m][j] /= sum
			}
		}
	}
	for _, j := range s.types {
		used := 0.0
		for _, m := range s.jobs {
			used += float64(p.Jobs[m].ScaleFactor) * out[m][j]
		}
		if w := float64(p.Workers[j]); used > w {
			for _, m := range s.jobs {
				out[m][j] *= w / used
			}
		}
	}
	return out
}

// solveMaxMin is Gavel's MaxMinFairnessPolicyWithPerf (max_min_fairness.py): maximise
// min_m Σ_j c_mj·X_mj with c_mj = T_mj·scale_factor_m / (priority_weight_m·proportional_m),
// under the base constraints. Jobs whose proportional throughput is 0 (they cannot run on
// any type with workers; Gavel divides by zero there) are left out with a zero row.
func solveMaxMin(p *Problem, t [][]float64) (Solution, error) {
	prop := proportionalThroughputs(t, p.Workers)
	s := newSub(p, t, func(m int) bool { return prop[m] > 0 })
	if s.empty() {
		return Solution{X: zeroAllocation(len(p.Jobs), len(p.Types))}, nil
	}
	q := s.newLP(func(m, j int) float64 {
		jb := &p.Jobs[m]
		return t[m][j] * float64(jb.ScaleFactor) / (jb.PriorityWeight * prop[m])
	})
	q.hasZ, q.centre = true, true
	scale := scaleDemand(q)
	var sol Solution
	res, err := lpSolve(q, &sol)
	if err != nil {
		return Solution{}, err
	}
	sol.X, sol.Objective, sol.Bound = s.expand(res.x), res.primalObj*scale, res.dualObj*scale
	sol.CentringSteps = res.centringSteps
	return sol, nil
}

// solveSum is Gavel's ThroughputNormalizedByCostSumWithPerfSLOs without SLOs
// (max_sum_throughput.py): maximise Σ_mj T_mj/price_j·X_mj under the base constraints. Gavel
// sums raw throughputs (no scale-factor or normalisation term); so does this.
func solveSum(p *Problem, t [][]float64, prices []float64) (Solution, error) {
	s := newSub(p, t, func(int) bool { return true })
	if s.empty() {
		return Solution{X: zeroAllocation(len(p.Jobs), len(p.Types))}, nil
	}
	q := s.newLP(func(int, int) float64 { return 0 })
	clear(q.dem)
	k := len(s.types)
	q.g = make([]float64, len(q.c))
	for i, m := range s.jobs {
		for jj, j := range s.types {
			price := 1.0
			if prices != nil {
				price = prices[j]
			}
			q.g[i*k+jj] = t[m][j] / price
		}
	}
	scale := infNorm(q.g)
	for i := range q.g {
		q.g[i] /= scale
	}
	var sol Solution
	res, err := lpSolve(q, &sol)
	if err != nil {
		return Solution{}, err
	}
	sol.X, sol.Objective, sol.Bound = s.expand(res.x), res.primalObj*scale, res.dualObj*scale
	return sol, nil
}
