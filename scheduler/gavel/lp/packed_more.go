package lp

import (
	"fmt"
	"math"
)

// Gavel's other space-sharing LP policies.
const (
	MinTotalDurationPacked   = "min_total_duration_packed"
	FinishTimeFairnessPacked = "finish_time_fairness_packed"
)

// runnable says which jobs can run on some type with GPUs (alone or in a pair: a pair needs
// both jobs' types, so alone suffices) and have steps left.
func runnable(p *PackedProblem) []bool {
	prop := proportionalThroughputs(p.throughputs(), p.Workers)
	runs := make([]bool, len(p.Jobs))
	for m := range p.Jobs {
		runs[m] = prop[m] > 0 && p.Jobs[m].RemainingSteps > 0
	}
	return runs
}

// solveMakespanPacked is Gavel's MinTotalDurationPolicyWithPacking: its binary search for the
// smallest T with, for every job, Σ over the combinations that contain it of its throughput ×
// X >= remaining / T, under the packing base constraints. As for min_total_duration_perf, one
// max-min LP (factor 1/remaining) gives z* and the exact T* = 1/z*, Gavel's search is replayed
// against T >= T*, and Gavel's last feasibility LP at the final T returns X. Throughputs are
// the jobs' own (Gavel's packed variant has no agnostic rewrite); jobs with no remaining steps
// or that cannot run get zero rows.
func solveMakespanPacked(p *PackedProblem, idx *pairIndex) (PackedSolution, error) {
	runs := runnable(p)
	factor := make([]float64, len(p.Jobs))
	for m := range p.Jobs {
		if runs[m] {
			factor[m] = 1 / p.Jobs[m].RemainingSteps
		}
	}
	sol, res, err := packedLevel(p, idx, factor, runs, 0)
	if err != nil || sol.Classes == 0 {
		return sol, err
	}
	zStar := res.primalObj
	if !(zStar > 0) {
		return PackedSolution{}, fmt.Errorf("lp: packed makespan: max-min LP ended at %v (%s)", zStar, sol.Warning)
	}
	tFinal, _, err := gavelSearch(func(T float64) bool { return T*zStar >= 1-1e-9 })
	if err != nil {
		return PackedSolution{}, err
	}
	sol.Objective, sol.Bound = tFinal, 1/zStar
	if tFinal*zStar > 1+1e-6 { // an interior exists; at T* exactly the max-min point is the answer
		for m := range factor {
			factor[m] *= tFinal
		}
		if f, _, err := packedLevel(p, idx, factor, runs, 1); err == nil && f.Warning == "" {
			f.Objective, f.Bound, f.LPSolves = tFinal, 1/zStar, sol.LPSolves+1
			return f, nil
		}
		sol.LPSolves++
	}
	return sol, nil
}

// solveFTFPacked is Gavel's FinishTimeFairnessPolicyWithPacking: minimise max_m ρ_m with
// ρ_m = (t_m + r_m / (Σ over m's combinations of T·X / w_m)) / (c_m + r_m / iso_m); unlike the
// unpacked policy, Gavel's packed one divides the throughputs by the priority weight w_m
// (its flatten(priority_weights)); iso_m is the isolated policy's throughput (unweighted).
// Solved exactly as solveFTF: ρ is feasible iff the packed max-min LP with factor
// (ρE_m − t_m)/(r_m·w_m) reaches 1, and the smallest feasible ρ is found by Illinois regula
// falsi inside [lower bound, ρ of the isolated allocation].
func solveFTFPacked(p *PackedProblem, idx *pairIndex) (PackedSolution, error) {
	runs := runnable(p)
	iso := isolatedThroughputs(p.throughputs(), &p.Problem)
	best := make([]float64, len(p.Jobs)) // largest throughput a job can have on a type with GPUs
	for m, jb := range p.Jobs {
		for j, v := range jb.Throughput {
			if p.Workers[j] > 0 {
				best[m] = math.Max(best[m], v)
			}
		}
	}
	for _, pr := range p.Pairs {
		for j, v := range pr.Throughput {
			if p.Workers[j] > 0 {
				best[pr.A], best[pr.B] = math.Max(best[pr.A], v[0]), math.Max(best[pr.B], v[1])
			}
		}
	}
	e := make([]float64, len(p.Jobs))
	lo, hi := 0.0, 0.0
	for m, jb := range p.Jobs {
		if runs[m] = runs[m] && iso[m] > 0; !runs[m] {
			continue
		}
		e[m] = jb.CumulativeIsolatedTime + jb.RemainingSteps/iso[m]
		w := jb.PriorityWeight
		lo = math.Max(lo, (jb.TimeSinceStart+jb.RemainingSteps*w/best[m])/e[m])
		hi = math.Max(hi, (jb.TimeSinceStart+jb.RemainingSteps*w/iso[m])/e[m])
	}
	f := &ftfPacked{p: p, idx: idx, runs: runs, e: e, lo: lo, hi: hi}
	return f.solve()
}

// ftfPacked is one packed finish-time-fairness problem and its ρ bracket.
type ftfPacked struct {
	p      *PackedProblem
	idx    *pairIndex
	runs   []bool
	e      []float64
	lo, hi float64
}

func (f *ftfPacked) solve() (PackedSolution, error) {
	sol := f.isolated()
	some := false
	for _, r := range f.runs {
		some = some || r
	}
	if !some {
		return sol, nil
	}
	sol.Objective, sol.Bound = f.hi, f.lo
	zlo, zhi := math.NaN(), math.NaN()
	side, probes := 0, 0
	for probes < ftfMaxProbes && math.Min(f.hi, sol.Objective)-f.lo > ftfRelTol*f.hi {
		rho := (&ftf{lo: f.lo, hi: f.hi}).next(zlo, zhi)
		factor := make([]float64, len(f.p.Jobs))
		for m, jb := range f.p.Jobs {
			if f.runs[m] {
				factor[m] = (rho*f.e[m] - jb.TimeSinceStart) / (jb.RemainingSteps * jb.PriorityWeight)
			}
		}
		probes++
		x, _, err := packedLevel(f.p, f.idx, factor, f.runs, 0)
		if err != nil {
			return PackedSolution{}, err
		}
		if z := x.Objective; z < 1 {
			f.lo, zlo = rho, z
			if side < 0 {
				zhi = 1 + (zhi-1)/2
			}
			side = -1
			continue
		} else {
			f.hi, zhi = rho, z
		}
		if side > 0 {
			zlo = 1 + (zlo-1)/2
		}
		side = 1
		if a := f.achieved(&x); a < sol.Objective {
			x.Objective = a
			sol = x
		}
		sol.Classes = x.Classes
	}
	sol.LPSolves = probes
	sol.Objective, sol.Bound = math.Max(sol.Objective, f.lo), f.lo
	return sol, nil
}

// achieved returns max_m ρ_m under the packed allocation x.
func (f *ftfPacked) achieved(x *PackedSolution) float64 {
	tp := make([]float64, len(f.p.Jobs))
	for m, row := range x.X {
		for j, v := range row {
			tp[m] += v * f.p.Jobs[m].Throughput[j]
		}
	}
	for i, row := range x.Pairs {
		pr := f.p.Pairs[i]
		for j, v := range row {
			tp[pr.A] += v * pr.Throughput[j][0]
			tp[pr.B] += v * pr.Throughput[j][1]
		}
	}
	worst := 0.0
	for m, jb := range f.p.Jobs {
		if !f.runs[m] {
			continue
		}
		if tp[m] <= 0 {
			return math.Inf(1)
		}
		worst = math.Max(worst, (jb.TimeSinceStart+jb.RemainingSteps*jb.PriorityWeight/tp[m])/f.e[m])
	}
	return worst
}

// isolated is the isolated allocation of the jobs that run (no pairs): feasible, with ρ <= hi.
func (f *ftfPacked) isolated() PackedSolution {
	p := f.p
	k := len(p.Types)
	out := PackedSolution{Solution: Solution{X: zeroAllocation(len(p.Jobs), k)}, Pairs: make([][]float64, len(p.Pairs))}
	for i := range out.Pairs {
		out.Pairs[i] = make([]float64, k)
	}
	n := float64(len(p.Jobs))
	for m, jb := range p.Jobs {
		if !f.runs[m] {
			continue
		}
		sum := 0.0
		for j := range p.Types {
			out.X[m][j] = float64(p.Workers[j]) / n / float64(jb.ScaleFactor)
			sum += out.X[m][j]
		}
		for j := range p.Types {
			out.X[m][j] /= math.Max(sum, 1)
		}
	}
	return out
}
