// Package lp computes Gavel's optimisation-based allocations (Narayanan et al., OSDI 2020): for
// the active jobs and a cluster of typed GPUs, the time-fraction matrix X[m][j] that a policy
// chooses (policies/*.py in stanford-futuredata/gavel, matched in semantics, not copied).
//
// Every policy reduces to one LP shape (per-job row constraints plus one capacity constraint per
// worker type), solved by a structured primal–dual interior-point method whose Newton systems
// collapse, by block elimination, to a (#types)-square dense system: O(jobs·types²) per iteration.
// On the degenerate max-min, FTF and makespan LPs, centring steps after convergence move the end
// point to near the analytic centre of the optimal face, where Gavel's solvers end (centre.go).
// Finish-time fairness (convex, not an LP) is solved exactly by bisection over LP feasibility;
// makespan follows Gavel's binary search. See docs/gavel-lp.md.
package lp

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Problem is one allocation problem: the active jobs (or job combinations) and the cluster.
type Problem struct {
	Types   []string // worker types, e.g. v100, p100, k80
	Workers []int    // number of GPUs of each type (len == len(Types))
	Jobs    []Job
	Now     float64 // simulated seconds, for finish-time fairness
}

// Job is one active job as the policies see it.
type Job struct {
	ID             int
	Throughput     []float64 // steps/s on each type (aggregate over the job's GPUs, consolidated); 0 = cannot run
	ScaleFactor    int       // GPUs the job uses
	PriorityWeight float64   // 1 or 5 etc.
	RemainingSteps float64
	// Finish-time fairness inputs (Gavel's finish_time_fairness.py):
	TimeSinceStart         float64 // now - arrival
	CumulativeIsolatedTime float64 // time the job would have had under isolated so far
	NumStepsTotal          float64
	// SLO inputs (max_sum_throughput_normalized_by_cost_perf_SLOs): HasSLO marks a job with a
	// deadline, SLOTimeLeftS is its deadline minus now (Gavel's SLOs[job] - now; negative once
	// passed).
	HasSLO       bool
	SLOTimeLeftS float64
}

// Allocation[m][j] = fraction of time job m spends on type j (rows sum <= 1).
type Allocation [][]float64

// Options tunes a solve.
type Options struct {
	// AgnosticCorrected selects the corrected heterogeneity-agnostic baselines. false (the
	// default) is Gavel-faithful: max_min_fairness sets every throughput to 1, and
	// finish_time_fairness / min_total_duration copy the reference type's (V100's) throughput to
	// every type (Gavel issue #248). true: max_min_fairness keeps 0 where a job cannot run, and
	// FTF / makespan give every type, where the job can run, the job's mean throughput over the
	// cluster's GPUs (Σ_j workers_j·T_j / Σ_j workers_j): what a type-blind scheduler measures.
	AgnosticCorrected bool
	// Prices per worker type ($/GPU-hour, or any unit), for max_sum_throughput_normalized_by_cost_perf
	// (required there). Every other policy ignores them, as Gavel's do (max_sum_throughput_perf is
	// Gavel's ThroughputNormalizedByCostSum with unit prices).
	Prices []float64
	// ReferenceType names the type whose throughput the faithful agnostic FTF and makespan copy.
	// "" means the first type named "v100" (case-insensitive), else Types[0].
	ReferenceType string
}

// Policy names, as Gavel registers them (scheduler/utils.py get_policy).
const (
	MaxMinFairness              = "max_min_fairness"
	MaxMinFairnessPerf          = "max_min_fairness_perf"
	FinishTimeFairness          = "finish_time_fairness"
	FinishTimeFairnessPerf      = "finish_time_fairness_perf"
	MinTotalDuration            = "min_total_duration"
	MinTotalDurationPerf        = "min_total_duration_perf"
	MaxSumThroughputPerf        = "max_sum_throughput_perf"
	MaxSumThroughputPerCostPerf = "max_sum_throughput_normalized_by_cost_perf"
	// MaxSumThroughputPerCostPerfSLOs is the cost policy with Gavel's SLO constraints.
	MaxSumThroughputPerCostPerfSLOs = "max_sum_throughput_normalized_by_cost_perf_SLOs"
)

// Policies lists the policy names Solve accepts, sorted.
func Policies() []string {
	names := []string{MaxMinFairness, MaxMinFairnessPerf, FinishTimeFairness, FinishTimeFairnessPerf,
		MinTotalDuration, MinTotalDurationPerf, MaxSumThroughputPerf, MaxSumThroughputPerCostPerf,
		MaxSumThroughputPerCostPerfSLOs}
	sort.Strings(names)
	return names
}

// Solve computes the allocation of the named Gavel policy. The result has one row per job of p
// (in p.Jobs order) and one column per type; every entry is in [0, 1], rows sum to at most 1,
// and Σ_m ScaleFactor_m·X[m][j] <= Workers[j] (up to 1e-9 relative). A job that cannot run on
// any type that has GPUs gets a zero row. Solve is deterministic.
func Solve(policy string, p Problem, opts Options) (Allocation, error) {
	sol, err := solve(policy, &p, opts)
	if err != nil {
		return nil, err
	}
	return sol.X, nil
}

// Solution is an allocation and what the policy optimised, for reporting and tests.
type Solution struct {
	X Allocation
	// SLOsDropped is set by the SLO policy when no allocation meets every SLO and the LP was
	// solved without them, as Gavel does ("No allocation possible with provided SLOs!").
	SLOsDropped bool
	// Objective is the policy's optimum: the max-min normalised throughput (max_min_fairness*),
	// the min-max finish-time-fairness ρ (finish_time_fairness*), the makespan T in seconds that
	// Gavel's binary search ends at (min_total_duration*), or Σ T/price·X (max_sum_throughput*).
	Objective float64
	// Bound certifies Objective: the LP dual bound (max-min, sum), the largest ρ proven
	// infeasible (FTF), or the exact optimal makespan 1/z* (min_total_duration).
	Bound float64
	// LPSolves counts the interior-point solves.
	LPSolves int
	// CentringSteps counts the Newton steps that moved X from the interior-point end point to
	// near the analytic centre of the optimal face (max-min, makespan and FTF policies; centre.go).
	CentringSteps int
	// Warning is set when an LP ended short of the optimality tolerance (near-degenerate
	// problems): X is then still within the constraints but maybe not optimal. Gavel prints
	// "Allocation returned by policy not optimal!" and goes on with cvxpy's point; so does Solve.
	Warning string
}

func solve(policy string, p *Problem, opts Options) (Solution, error) {
	if err := validate(p, policy, opts); err != nil {
		return Solution{}, err
	}
	switch policy {
	case MaxMinFairness, MaxMinFairnessPerf:
		return solveMaxMin(p, throughputsFor(policy, p, opts))
	case FinishTimeFairness, FinishTimeFairnessPerf:
		return solveFTF(p, throughputsFor(policy, p, opts))
	case MinTotalDuration, MinTotalDurationPerf:
		return solveMakespan(p, throughputsFor(policy, p, opts))
	case MaxSumThroughputPerf:
		return solveSum(p, p.throughputs(), nil) // Gavel's ThroughputSumWithPerf: unit prices
	case MaxSumThroughputPerCostPerf:
		return solveSum(p, p.throughputs(), opts.Prices)
	case MaxSumThroughputPerCostPerfSLOs:
		return solveSumSLOs(p, p.throughputs(), opts.Prices)
	}
	return Solution{}, fmt.Errorf("lp: unknown policy %q (known: %s)", policy, strings.Join(Policies(), ", "))
}

func validate(p *Problem, policy string, opts Options) error {
	known := false
	for _, n := range Policies() {
		known = known || n == policy
	}
	if !known {
		return fmt.Errorf("lp: unknown policy %q (known: %s)", policy, strings.Join(Policies(), ", "))
	}
	k := len(p.Types)
	if len(p.Workers) != k {
		return fmt.Errorf("lp: %d worker counts for %d types", len(p.Workers), k)
	}
	for j, w := range p.Workers {
		if w < 0 {
			return fmt.Errorf("lp: type %s: %d workers; want >= 0", p.Types[j], w)
		}
	}
	if (policy == MaxSumThroughputPerCostPerf || policy == MaxSumThroughputPerCostPerfSLOs) && opts.Prices == nil {
		return fmt.Errorf("lp: policy %s needs Options.Prices (one per type)", policy)
	}
	if opts.Prices != nil {
		if len(opts.Prices) != k {
			return fmt.Errorf("lp: %d prices for %d types", len(opts.Prices), k)
		}
		for j, c := range opts.Prices {
			if !(c > 0) || math.IsInf(c, 0) {
				return fmt.Errorf("lp: type %s: price %v; want > 0 and finite", p.Types[j], c)
			}
		}
	}
	for i := range p.Jobs {
		if err := validateJob(&p.Jobs[i], p.Types); err != nil {
			return err
		}
	}
	return nil
}

func validateJob(jb *Job, types []string) error {
	if len(jb.Throughput) != len(types) {
		return fmt.Errorf("lp: job %d: %d throughputs for %d types", jb.ID, len(jb.Throughput), len(types))
	}
	for j, t := range jb.Throughput {
		if !(t >= 0) || math.IsInf(t, 0) {
			return fmt.Errorf("lp: job %d: throughput on %s is %v; want >= 0 and finite", jb.ID, types[j], t)
		}
	}
	if jb.ScaleFactor < 1 {
		return fmt.Errorf("lp: job %d: scale factor %d; want >= 1", jb.ID, jb.ScaleFactor)
	}
	if math.IsNaN(jb.SLOTimeLeftS) || math.IsInf(jb.SLOTimeLeftS, 0) {
		return fmt.Errorf("lp: job %d: SLO time left is %v; want a finite number of seconds", jb.ID, jb.SLOTimeLeftS)
	}
	if !(jb.PriorityWeight > 0) || math.IsInf(jb.PriorityWeight, 0) {
		return fmt.Errorf("lp: job %d: priority weight %v; want > 0 and finite", jb.ID, jb.PriorityWeight)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"remaining steps", jb.RemainingSteps}, {"time since start", jb.TimeSinceStart},
		{"cumulative isolated time", jb.CumulativeIsolatedTime}, {"total steps", jb.NumStepsTotal}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("lp: job %d: %s is %v; want >= 0 and finite", jb.ID, f.name, f.v)
		}
	}
	return nil
}

// throughputs returns a copy of the jobs' throughput rows.
func (p *Problem) throughputs() [][]float64 {
	t := make([][]float64, len(p.Jobs))
	for m := range p.Jobs {
		t[m] = append([]float64(nil), p.Jobs[m].Throughput...)
	}
	return t
}

// zeroAllocation returns an all-zero n×k allocation.
func zeroAllocation(n, k int) Allocation {
	x := make(Allocation, n)
	for m := range x {
		x[m] = make([]float64, k)
	}
	return x
}
