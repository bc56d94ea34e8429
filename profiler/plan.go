package profiler

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Strategies: how a sweep chooses its points.
const (
	// StrategyOptimistic measures at most Budget points: the ends and the
	// knee of each axis, then the cell the fit is least sure of, and
	// predicts the rest.
	StrategyOptimistic = "optimistic"
	// StrategyAxes measures the whole CPU axis (memory unlimited, data
	// warm) and the whole memory axis at the best CPU count.
	StrategyAxes = "axes"
	// StrategyGrid measures every cell: the ground truth.
	StrategyGrid = "grid"
	// StrategySynergy reproduces Synergy's offline profiler: from all CPUs
	// down, halving while within 10% of the previous point, else stepping
	// down by the GPU count; memory is not measured but predicted.
	StrategySynergy = "synergy"
)

// Strategies lists the strategy names.
func Strategies() []string {
	return []string{StrategyOptimistic, StrategyAxes, StrategyGrid, StrategySynergy}
}

// DefaultBudget is the most points the optimistic strategy measures.
const DefaultBudget = 10

// NoPointCap is Config.Budget under a time budget with no point cap given:
// the strategy measures while the time lasts and a prediction is uncertain.
const NoPointCap = 1 << 30

// kneeFrac is the share of the best throughput that counts as "reached"
// when looking for an axis' knee.
const kneeFrac = 0.97

// planner picks the next point to measure from what is measured so far. It
// derives everything from the profile's cells, so a resumed profile picks
// up where it stopped. ok=false: the strategy is done.
type planner func(s *recorder) (pt point, ok bool)

func plannerFor(name string) (planner, error) {
	switch name {
	case StrategyOptimistic, "":
		return planOptimistic, nil
	case StrategyAxes:
		return planAxes, nil
	case StrategyGrid:
		return planGrid, nil
	case StrategySynergy:
		return planSynergy, nil
	}
	return nil, fmt.Errorf("strategy: %q is not one of optimistic, axes, grid, synergy", name)
}

// mkPoint makes the point for a cell: a limited memory point starts cold.
func mkPoint(cpus float64, mem int64, phase string) point {
	return point{cpus: cpus, memLimit: mem, phase: phase, cold: !sensitivity.Unlimited(mem)}
}

func planAxes(s *recorder) (point, bool) {
	for _, c := range s.prof.Axes.CPUs {
		if !s.measured(c, 0) {
			return mkPoint(c, 0, sensitivity.PhaseCPU), true
		}
	}
	best, ok := bestCPU(s.prof.Cells)
	if !ok {
		return point{}, false
	}
	for _, m := range slices.Backward(s.limitedMems()) {
		if !s.measured(best, m) {
			return mkPoint(best, m, sensitivity.PhaseMemory), true
		}
	}
	return point{}, false
}

func planGrid(s *recorder) (point, bool) {
	for _, c := range s.prof.Axes.CPUs {
		if !s.measured(c, 0) {
			return mkPoint(c, 0, sensitivity.PhaseCPU), true
		}
	}
	for _, c := range s.prof.Axes.CPUs {
		for _, m := range slices.Backward(s.limitedMems()) {
			if !s.measured(c, m) {
				return mkPoint(c, m, sensitivity.PhaseGrid), true
			}
		}
	}
	return point{}, false
}

// planSynergy follows Synergy's offline profiler (src/profiler/
// offline_profiler.py): start at the most CPUs; if the throughput is within
// 10% of the previous point's, halve the CPUs, else step down by the GPU
// count; stop below the smallest CPU count. Targets are rounded down to the
// CPU axis. The first point compares with itself (Synergy runs it twice).
func planSynergy(s *recorder) (point, bool) {
	axis := s.prof.Axes.CPUs
	cur := axis[len(axis)-1]
	prev := cur
	for {
		if !s.measured(cur, 0) {
			return mkPoint(cur, 0, sensitivity.PhaseCPU), true
		}
		tc, _ := s.value(cur, 0)
		tp, _ := s.value(prev, 0)
		target := cur - float64(s.cfg.GPUs)
		if tp > 0 && math.Abs(tc-tp) <= 0.10*tp {
			target = cur / 2
		}
		next, ok := floorOnAxis(axis, target, cur)
		if !ok {
			return point{}, false
		}
		prev, cur = cur, next
	}
}

// floorOnAxis returns the largest axis value <= target and < below.
func floorOnAxis(axis []float64, target, below float64) (float64, bool) {
	for i := len(axis) - 1; i >= 0; i-- {
		if axis[i] <= target && axis[i] < below {
			return axis[i], true
		}
	}
	return 0, false
}

// refineRelCI is the relative uncertainty (95% half-width over value) below
// which a predicted cell is not worth measuring.
const refineRelCI = 0.05

// maxKneeSteps bounds the extra points spent finding one axis' knee.
const maxKneeSteps = 2

// planOptimistic measures, within the budget: both ends of the CPU axis and
// its knee (the fewest CPUs reaching 97% of the best, by bisection); both
// ends of the memory axis at that CPU count and its knee; then, while
// budget remains, the unmeasured cell whose prediction is least certain
// per second of measuring it. Under a time budget and no point cap
// (Config.Budget 0), it goes on while time and uncertain cells remain.
func planOptimistic(s *recorder) (point, bool) {
	if s.fitPoints() >= s.cfg.Budget {
		return point{}, false
	}
	cpus := s.prof.Axes.CPUs
	// 1. CPU ends.
	for _, c := range []float64{cpus[0], cpus[len(cpus)-1]} {
		if !s.measured(c, 0) {
			return mkPoint(c, 0, sensitivity.PhaseCPU), true
		}
	}
	// 2. CPU knee.
	cv := func(i int) (float64, bool) { return s.value(cpus[i], 0) }
	if i, ok := kneeStep(len(cpus), 2, cv); ok {
		return mkPoint(cpus[i], 0, sensitivity.PhaseCPU), true
	}
	best := kneeValue(cpus, cv)
	// 3. Memory ends at the knee's CPU count.
	mems := s.limitedMems()
	if len(mems) > 0 {
		for _, m := range []int64{mems[len(mems)-1], mems[0]} { // memory lowered in place, never raised
			if !s.measured(best, m) {
				return mkPoint(best, m, sensitivity.PhaseMemory), true
			}
		}
		// 4. Memory knee, with unlimited as the axis' top.
		all := append(append([]int64(nil), mems...), 0)
		mv := func(i int) (float64, bool) { return s.value(best, all[i]) }
		if i, ok := kneeStep(len(all), 3, mv); ok {
			return mkPoint(best, all[i], sensitivity.PhaseMemory), true
		}
	}
	// 5. Refine, while any prediction is uncertain by more than
	// refineRelCI: the cell the model is least sure of, per second of
	// measuring it (cost_budget.go).
	return refinePoint(s)
}

// kneeStep looks for the knee of an axis of n points whose values v(i) are
// non-decreasing in truth: the first index reaching kneeFrac of the best
// measured value. Between the highest measured index below that and the
// lowest measured index at or above it, it proposes the midpoint, for at
// most maxKneeSteps points beyond the axis' ends (ends of them measured
// first). ok=false when the knee is pinned down (adjacent measured points)
// or the steps are spent.
func kneeStep(n, ends int, v func(int) (float64, bool)) (int, bool) {
	best := 0.0
	var have []int
	for i := 0; i < n; i++ {
		if x, ok := v(i); ok {
			have = append(have, i)
			best = math.Max(best, x)
		}
	}
	if len(have) < 2 || len(have)-ends >= maxKneeSteps {
		return 0, false
	}
	lo, hi := -1, -1
	for _, i := range have {
		if x, _ := v(i); x < kneeFrac*best {
			lo = i // the highest measured index still below the knee
		}
	}
	for _, i := range have {
		if x, _ := v(i); i > lo && x >= kneeFrac*best {
			hi = i // the lowest measured index above lo that reaches it
			break
		}
	}
	if lo < 0 || hi < 0 || hi-lo <= 1 {
		return 0, false
	}
	return (lo + hi) / 2, true
}

// kneeValue returns the axis value of the fewest CPUs measured to reach
// kneeFrac of the best.
func kneeValue(axis []float64, v func(int) (float64, bool)) float64 {
	best := 0.0
	for i := range axis {
		if x, ok := v(i); ok {
			best = math.Max(best, x)
		}
	}
	for i := range axis {
		if x, ok := v(i); ok && x >= kneeFrac*best && best > 0 {
			return axis[i]
		}
	}
	return axis[len(axis)-1]
}

// validationPoints picks k unmeasured cells (Config.ValidateCells): each the cell
// farthest (in grid steps) from every measured cell and every cell picked
// before it; among equals, the one farthest from the cells picked for
// validation so far, then fewer CPUs, then less memory.
func validationPoints(s *recorder, k int) []point {
	cpus, mems := s.prof.Axes.CPUs, s.prof.Axes.MemLimitBytes
	var taken []gridIdx
	for i, c := range cpus {
		for j, m := range mems {
			if s.measured(c, m) {
				taken = append(taken, gridIdx{i, j})
			}
		}
	}
	dist := func(a, b gridIdx) int { return absInt(a.i-b.i) + absInt(a.j-b.j) }
	var out []point
	var picked []gridIdx
	for len(out) < k {
		bestD, bestSpread, best := -1, -1, gridIdx{}
		for i, c := range cpus {
			for j, m := range mems {
				g := gridIdx{i, j}
				if s.measured(c, m) || slices.Contains(taken, g) {
					continue
				}
				d := math.MaxInt
				for _, t := range taken {
					d = min(d, dist(t, g))
				}
				spread := 0
				for _, q := range picked {
					spread += dist(q, g)
				}
				if d > bestD || (d == bestD && spread > bestSpread) {
					bestD, bestSpread, best = d, spread, g
				}
			}
		}
		if bestD < 0 {
			break
		}
		taken = append(taken, best)
		picked = append(picked, best)
		out = append(out, mkPoint(cpus[best.i], mems[best.j], sensitivity.PhaseValidate))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].cpus < out[b].cpus })
	return out
}

// gridIdx is a cell's (CPU, memory) index on the axes.
type gridIdx struct{ i, j int }

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// totalHint says how many points the strategy will measure in all, for
// progress: exact for the fixed strategies, a bound for optimistic.
func totalHint(s *recorder) string {
	nc, nm := len(s.prof.Axes.CPUs), len(s.limitedMems())
	switch s.cfg.Strategy {
	case StrategyGrid:
		return fmt.Sprint(nc * (nm + 1))
	case StrategyAxes:
		return fmt.Sprint(nc + nm)
	case StrategyOptimistic:
		return fmt.Sprintf("≤%d", min(s.cfg.Budget, nc*(nm+1)))
	}
	return fmt.Sprintf("≤%d", nc)
}
