package lp

import (
	"fmt"
	"math"
)

// Water-filling policy names (Gavel's max_min_fairness_water_filling.py, registered in
// utils.get_policy).
const (
	MaxMinFairnessWaterFilling     = "max_min_fairness_water_filling"
	MaxMinFairnessWaterFillingPerf = "max_min_fairness_water_filling_perf"
)

// Entity is one party of a hierarchical policy (a team, a user): its weight and how that
// weight is split over its jobs.
type Entity struct {
	Weight float64 // > 0
	// FIFO gives the entity's whole weight to its oldest (smallest id) job not yet frozen;
	// false ("fairness") splits it over its unfrozen jobs in proportion to their priority
	// weights. Gavel's priority_reweighting_policies 'fifo' and 'fairness'.
	FIFO bool
}

// Hierarchy assigns the jobs of a Problem to entities.
type Hierarchy struct {
	Entities  []Entity
	JobEntity []int // per Problem.Jobs: index into Entities
}

// WaterFillingSolution is the lexicographic max-min allocation and what it reached.
type WaterFillingSolution struct {
	X Allocation
	// Level is, per job, its normalised effective throughput times its scale factor,
	// Σ_j T_mj·X_mj·sf_m / proportional_m (what max_min_fairness_perf maximises the minimum
	// of, before the priority weight); 0 for a job that cannot run.
	Level []float64
	// Steps counts the water-filling iterations (one level each), LPSolves the LPs, CappedLPs
	// those that reached wfMaxIter before wfGapTol (their best point is used: primal and dual
	// feasible to ~1e-15, gap up to ~1e-4, and the step's rise is capped by the dual bound).
	Steps, LPSolves, CappedLPs int
}

// Water-filling tolerances. A frozen job's level, and every lower bound carried into the next
// step, is relaxed by wfRelax (relative) so that the next LP keeps a strictly feasible
// interior despite the previous LP's 1e-10 tolerance; a job whose level can rise by less than
// about that much counts as bottlenecked.
const wfRelax = 1e-7

// wfGapTol is the relative duality gap at which a water-filling LP stops (see structLP.gapTol),
// wfMaxIter its iteration cap, wfRaise the smallest rise (in units of a job's largest possible
// level) that makes a job not a bottleneck.
const (
	wfGapTol  = 1e-7
	wfMaxIter = 30
	wfRaise   = 1e-6
)

// SolveWaterFilling computes Gavel's hierarchical max-min fairness by water filling
// (max_min_fairness_water_filling.py): every step raises the weighted level of all jobs not
// yet frozen as far as possible (one LP: maximise t with Level_m >= base_m + w_m·t for the
// unfrozen jobs and Level_m >= final_m for the frozen ones), then freezes the jobs that cannot
// rise any further (the bottlenecks), then recomputes the weights inside each entity (Gavel's
// _compute_priority_weights), until every job is frozen.
//
// Gavel finds the bottlenecks with a MILP per step (binary z_m: can m rise by 0.01 %?). Here
// they come from the same LP's end point. By the Goldman–Tucker theorem the step LP has a
// strictly complementary optimal pair: job m's level row has a positive slack in it exactly when
// some optimal X raises m above its new level (m is not a bottleneck), and a positive dual
// exactly when every optimal X keeps m there (m is a bottleneck). A primal–dual interior-point
// method converges to such a pair (the analytic centre of the optimal face), so at its end
// point a job whose slack exceeds both its dual and wfRaise is not a bottleneck (the end point
// itself raises it: a witness), and every other job is (the indicator of El-Bakry, Tapia,
// Tsuchiya and Zhang 1996). Every step freezes at least one job (the weighted duals of the
// unfrozen rows sum to 1), so there are at most #jobs steps. The test checks the levels against
// an exact reference that decides every bottleneck by its own LP (gonum's simplex).
//
// hier == nil gives plain lexicographic max-min with the jobs' priority weights (Gavel with
// priority_reweighting_policies None). The agnostic policy sets every throughput to 1 first
// (Gavel's MaxMinFairnessWaterFillingPolicy).
func SolveWaterFilling(policy string, p Problem, hier *Hierarchy, opts Options) (WaterFillingSolution, error) {
	if policy != MaxMinFairnessWaterFilling && policy != MaxMinFairnessWaterFillingPerf {
		return WaterFillingSolution{}, fmt.Errorf("lp: unknown water-filling policy %q (known: %s, %s)",
			policy, MaxMinFairnessWaterFilling, MaxMinFairnessWaterFillingPerf)
	}
	base := MaxMinFairnessPerf
	if policy == MaxMinFairnessWaterFilling {
		base = MaxMinFairness
	}
	if err := validate(&p, base, opts); err != nil {
		return WaterFillingSolution{}, err
	}
	if err := validateHierarchy(&p, hier); err != nil {
		return WaterFillingSolution{}, err
	}
	t := throughputsFor(base, &p, opts)
	prop := proportionalThroughputs(t, p.Workers)
	s := newSub(&p, t, func(m int) bool { return prop[m] > 0 })
	out := WaterFillingSolution{X: zeroAllocation(len(p.Jobs), len(p.Types)), Level: make([]float64, len(p.Jobs))}
	if s.empty() {
		return out, nil
	}
	w := newWaterFill(&p, s, t, prop, hier)
	if err := w.run(&out); err != nil {
		return WaterFillingSolution{}, err
	}
	return out, nil
}

func validateHierarchy(p *Problem, h *Hierarchy) error {
	if h == nil {
		return nil
	}
	if len(h.JobEntity) != len(p.Jobs) {
		return fmt.Errorf("lp: hierarchy has %d job entities for %d jobs", len(h.JobEntity), len(p.Jobs))
	}
	for e, en := range h.Entities {
		if !(en.Weight > 0) || math.IsInf(en.Weight, 0) {
			return fmt.Errorf("lp: entity %d: weight %v; want > 0 and finite", e, en.Weight)
		}
	}
	for m, e := range h.JobEntity {
		if e < 0 || e >= len(h.Entities) {
			return fmt.Errorf("lp: job %d: entity %d; want 0..%d", p.Jobs[m].ID, e, len(h.Entities)-1)
		}
	}
	return nil
}

// waterFill is one water-filling run over the jobs of s (sub indices i, problem indices s.jobs[i]).
type waterFill struct {
	p      *Problem
	s      sub
	hier   *Hierarchy
	coef   []float64 // n*k: level coefficients T·sf/prop
	frozen []bool
	final  []float64 // level at freezing
	base   []float64 // level reached so far (Gavel's normalized_effective_throughputs_so_far × sf)
	weight []float64 // this step's weights
}

func newWaterFill(p *Problem, s sub, t [][]float64, prop []float64, hier *Hierarchy) *waterFill {
	n, k := len(s.jobs), len(s.types)
	w := &waterFill{p: p, s: s, hier: hier, coef: make([]float64, n*k), frozen: make([]bool, n),
		final: make([]float64, n), base: make([]float64, n), weight: make([]float64, n)}
	for i, m := range s.jobs {
		sf := float64(p.Jobs[m].ScaleFactor)
		for jj, j := range s.types {
			w.coef[i*k+jj] = t[m][j] * sf / prop[m]
		}
	}
	return w
}

func (w *waterFill) run(out *WaterFillingSolution) error {
	var last []float64
	for {
		if !w.reweight() {
			break
		}
		out.Steps++
		q := w.stepLP()
		res, err := w.solve(q, out)
		if err != nil {
			return fmt.Errorf("water filling step %d: %w", out.Steps, err)
		}
		last = res.x
		// A step that ended short of the tolerance may overshoot; the dual bound (its dual
		// feasibility is kept to 1e-15) caps it, so later steps stay feasible.
		tStar := math.Max(math.Min(res.z, res.dualObj), 0)
		n := len(w.s.jobs)
		bottleneck := make([]bool, n)
		any := false
		for i := 0; i < n; i++ {
			if !w.frozen[i] && w.weight[i] > 0 {
				w.base[i] = w.base[i]*(1-wfRelax) + w.weight[i]*tStar // what the LP's row holds it to
			}
		}
		for i := 0; i < n; i++ {
			if w.frozen[i] || w.weight[i] == 0 {
				continue
			}
			b := w.isBottleneck(i, res)
			bottleneck[i] = b
			any = any || b
		}
		if !any { // cannot happen with an optimal dual; freeze the tightest job so the loop ends
			bottleneck[w.tightest(res)] = true
		}
		for i, b := range bottleneck {
			if b {
				w.frozen[i], w.final[i] = true, w.base[i]
			}
		}
	}
	out.X = w.s.expand(last)
	k := len(w.s.types)
	for i, m := range w.s.jobs {
		for jj, j := range w.s.types {
			out.Level[m] += w.coef[i*k+jj] * out.X[m][j]
		}
	}
	return nil
}

func (w *waterFill) solve(q *structLP, out *WaterFillingSolution) (ipmResult, error) {
	var sol Solution
	res, err := lpSolve(q, &sol)
	out.LPSolves += sol.LPSolves
	if sol.Warning != "" {
		out.CappedLPs++
	}
	return res, err
}

// reweight is Gavel's _compute_priority_weights: it sets this step's weight of every job not
// frozen and says whether any job still has a positive weight.
func (w *waterFill) reweight() bool {
	n := len(w.s.jobs)
	clear(w.weight)
	if w.hier == nil {
		for i, m := range w.s.jobs {
			if !w.frozen[i] {
				w.weight[i] = w.p.Jobs[m].PriorityWeight
			}
		}
	} else {
		total := make([]float64, len(w.hier.Entities))
		head := make([]int, len(w.hier.Entities))
		for e := range head {
			head[e] = -1
		}
		for i, m := range w.s.jobs {
			if w.frozen[i] {
				continue
			}
			e := w.hier.JobEntity[m]
			total[e] += w.p.Jobs[m].PriorityWeight
			if head[e] < 0 || w.p.Jobs[m].ID < w.p.Jobs[w.s.jobs[head[e]]].ID {
				head[e] = i
			}
		}
		for i, m := range w.s.jobs {
			if w.frozen[i] {
				continue
			}
			e := w.hier.JobEntity[m]
			en := w.hier.Entities[e]
			switch {
			case !en.FIFO:
				w.weight[i] = en.Weight * w.p.Jobs[m].PriorityWeight / total[e]
			case head[e] == i:
				w.weight[i] = en.Weight
			}
		}
	}
	for i := 0; i < n; i++ {
		if w.weight[i] > 0 {
			return true
		}
	}
	return false
}

// stepLP builds the step's LP: maximise t subject to the base constraints and, per job,
// Level >= lower + weight·t (weight 0 for frozen and unweighted jobs), each demand row divided
// by its largest coefficient.
func (w *waterFill) stepLP() *structLP {
	q := w.s.newLP(func(int, int) float64 { return 0 })
	copy(q.c, w.coef)
	q.hasZ = true
	q.gapTol, q.maxIter = wfGapTol, wfMaxIter
	q.zc = make([]float64, q.n)
	k := q.k
	for i := 0; i < q.n; i++ {
		lower := w.base[i]
		if w.frozen[i] {
			lower = w.final[i]
		}
		row := q.c[i*k : (i+1)*k]
		sc := infNorm(row)
		for j := range row {
			row[j] /= sc
		}
		q.b[i] = lower * (1 - wfRelax) / sc
		if lower == 0 && w.weight[i] == 0 {
			q.b[i] = -1 // Level >= 0 holds anyway; a row that can never be tight keeps the LP nondegenerate
		}
		q.zc[i] = w.weight[i] / sc
	}
	return q
}

// isBottleneck classifies an unfrozen weighted job from the LP's end point, rows equilibrated
// (largest coefficient 1, so a row's slack is in units of the job's largest possible level):
// the job can still rise when its slack exceeds both its dual and wfRaise; otherwise it is a
// bottleneck.
func (w *waterFill) isBottleneck(i int, res ipmResult) bool {
	return !(res.sQ[i] > res.lamQ[i] && res.sQ[i] > wfRaise)
}

// tightest is the unfrozen weighted job with the largest dual/slack ratio.
func (w *waterFill) tightest(res ipmResult) int {
	best, bestR := -1, -1.0
	for i := range w.s.jobs {
		if w.frozen[i] || w.weight[i] == 0 {
			continue
		}
		r := res.lamQ[i] / math.Max(res.sQ[i], 1e-300)
		if r > bestR {
			best, bestR = i, r
		}
	}
	return best
}
