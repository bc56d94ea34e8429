package gavel

import (
	"fmt"
	"sort"
	"strings"

	"github.com/synergy-sched/synergy/scheduler/gavel/lp"
)

// State is what a policy sees when the simulator recomputes the
// allocation: the cluster's types (in name order, as Gavel flattens its
// matrices), GPUs per type, and the active jobs in id order.
type State struct {
	Types   []string
	Workers []int
	Jobs    []StateJob
	Now     float64
	// Prices are each type's price at Now, when the run has a price file.
	Prices []float64
}

// StateJob is one active job.
type StateJob struct {
	ID             int
	Key            JobType   // the job's throughputs key
	Throughput     []float64 // steps/s on each of State.Types
	ScaleFactor    int
	PriorityWeight float64
	RemainingSteps float64
	TotalSteps     float64
	TimeSinceStart float64
	// HasSLO marks a job with an SLO; DeadlineS is then its deadline,
	// arrival + SLO × duration (Gavel's SLOs[job_id]).
	HasSLO    bool
	DeadlineS float64
}

// Allocation maps a job id to its time fractions per type (State.Types
// order).
type Allocation map[int][]float64

// Policy computes allocations. Name is Gavel's policy class name; the
// mechanism reads it as Gavel does ("Perf" or "Packing" in it: worker types
// are visited in priority order, otherwise shuffled each round; a name
// starting with "FIFO": jobs with priority 0 are not run).
type Policy interface {
	Name() string
	Allocate(s *State) (Allocation, error)
}

// PolicyNames are the policies NewPolicy knows without an LP solver.
var PolicyNames = []string{"fifo", "fifo_perf", "isolated", "proportional", "gandiva", "allox"}

// LPPolicyNames are Gavel's optimisation policies, solved by package
// scheduler/gavel/lp.
var LPPolicyNames = []string{"max_min_fairness", "max_min_fairness_perf", "finish_time_fairness", "finish_time_fairness_perf",
	"min_total_duration", "min_total_duration_perf", "max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf",
	"max_sum_throughput_normalized_by_cost_perf_SLOs"}

// HierarchicalPolicyNames are Gavel's water-filling policies (hierarchical max-min fairness
// over entities; NewPolicy builds them without entities, NewHierarchicalPolicy with).
var HierarchicalPolicyNames = []string{lp.MaxMinFairnessWaterFilling, lp.MaxMinFairnessWaterFillingPerf}

// NewPolicy builds a policy by Gavel's name. seed is the run's seed (fifo's
// random choices use random.Random(seed), as Gavel's get_policy passes it);
// corrected selects the corrected
// agnostic baselines (real throughputs instead of the V100 copy, Gavel's
// issue #248).
func NewPolicy(name string, seed uint64, corrected bool) (Policy, error) {
	switch name {
	case "fifo":
		return &fifoPolicy{name: "FIFO", base: true, rng: NewPyRandom(seed), alloc: map[int]int{}}, nil
	case "fifo_perf":
		return &fifoPolicy{name: "FIFO_Perf", alloc: map[int]int{}}, nil
	case "isolated":
		return isolatedPolicy{}, nil
	case "proportional":
		return proportionalPolicy{}, nil
	case "allox":
		return &alloxPolicy{alpha: 1}, nil
	case "gandiva":
		return &gandivaPolicy{rng: NewPyRandom(seed), assigned: map[int]gandivaComb{}}, nil
	case "fifo_packed":
		return newFIFOPacked(), nil
	case lp.MaxMinFairnessPacked, lp.FinishTimeFairnessPacked, lp.MinTotalDurationPacked:
		return packedLPPolicy{policy: name, ftf: lp.NewFTFTracker()}, nil
	}
	for _, n := range LPPolicyNames {
		if n == name {
			return lpPolicy{policy: name, ftf: lp.NewFTFTracker(), corrected: corrected}, nil
		}
	}
	for _, n := range HierarchicalPolicyNames {
		if n == name {
			return NewHierarchicalPolicy(name, nil)
		}
	}
	all := append(append(append(append([]string(nil), PolicyNames...), LPPolicyNames...), HierarchicalPolicyNames...), PackedPolicyNames...)
	sort.Strings(all)
	return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(all, ", "))
}

// lpPolicy hands the problem to package lp; its tracker keeps the
// finish-time-fairness state Gavel keeps between allocations (cumulative
// isolated time).
type lpPolicy struct {
	policy    string
	ftf       *lp.FTFTracker
	corrected bool
}

func (p lpPolicy) Name() string {
	n := map[string]string{
		"max_min_fairness": "MaxMinFairness", "max_min_fairness_perf": "MaxMinFairness_Perf",
		"finish_time_fairness": "FinishTimeFairness", "finish_time_fairness_perf": "FinishTimeFairness_Perf",
		"min_total_duration": "MinTotalDuration", "min_total_duration_perf": "MinTotalDuration_Perf",
		"max_sum_throughput_perf": "ThroughputSumWithPerf", "max_sum_throughput_normalized_by_cost_perf": "ThroughputNormalizedByCostSum_Perf",
		"max_sum_throughput_normalized_by_cost_perf_SLOs": "ThroughputNormalizedByCostSum_PerfSLOs",
	}[p.policy]
	return n
}

// lpProblem is the state as package lp's problem: the types, GPUs per
// type and active jobs, in the state's order.
func (s *State) lpProblem() lp.Problem {
	prob := lp.Problem{Types: s.Types, Workers: s.Workers, Now: s.Now}
	for _, j := range s.Jobs {
		prob.Jobs = append(prob.Jobs, lp.Job{ID: j.ID, Throughput: j.Throughput, ScaleFactor: j.ScaleFactor,
			PriorityWeight: j.PriorityWeight, RemainingSteps: j.RemainingSteps, TimeSinceStart: j.TimeSinceStart,
			NumStepsTotal: j.TotalSteps, HasSLO: j.HasSLO, SLOTimeLeftS: j.DeadlineS - s.Now})
	}
	return prob
}

func (p lpPolicy) Allocate(s *State) (Allocation, error) {
	if len(s.Jobs) == 0 {
		return Allocation{}, nil
	}
	prob := s.lpProblem()
	opts := lp.Options{AgnosticCorrected: p.corrected}
	if NeedsPrices(p.policy) {
		if s.Prices == nil {
			return nil, fmt.Errorf("%s: needs a price file", p.policy)
		}
		opts.Prices = s.Prices
	}
	rows, err := p.ftf.Solve(p.policy, prob, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.policy, err)
	}
	if len(rows) != len(s.Jobs) {
		return nil, fmt.Errorf("%s: solver returned %d rows for %d jobs", p.policy, len(rows), len(s.Jobs))
	}
	a := Allocation{}
	for i, j := range s.Jobs {
		a[j.ID] = rows[i]
	}
	return a, nil
}

// fifoPolicy is Gavel's FIFOPolicy. In base mode (fifo) Gavel draws a
// random index among the types with room (random.Random(seed).randrange)
// but then allocates the type its loop variable last held: the last, by
// name, of the types that still have GPUs ("v100" while any V100 is
// free); and it drops the drawn index's type from the list when the
// allocated type's count reaches exactly zero.
// This is reproduced as is, so that fifo matches Gavel job by job; it is
// why Gavel's fifo uses mostly V100s. perf mode (fifo_perf) takes the
// fastest type with room and recomputes from scratch each time.
type fifoPolicy struct {
	name  string
	base  bool
	rng   *PyRandom
	alloc map[int]int // job → type index (State.Types order)
}

func (p *fifoPolicy) Name() string { return p.name }

func (p *fifoPolicy) Allocate(s *State) (Allocation, error) {
	p.assign(s)
	out := Allocation{}
	for _, j := range s.Jobs {
		row := make([]float64, len(s.Types))
		if t, ok := p.alloc[j.ID]; ok {
			row[t] = 1
		}
		out[j.ID] = row
	}
	return out, nil
}

// assign updates p.alloc (job → type) as Gavel's get_allocation does and returns the jobs
// still queued (Gavel's queue after its allocation loop, which fifo_packed packs from).
func (p *fifoPolicy) assign(s *State) []int {
	avail := append([]int(nil), s.Workers...)
	active := map[int]*StateJob{}
	for i := range s.Jobs {
		active[s.Jobs[i].ID] = &s.Jobs[i]
	}
	if !p.base {
		p.alloc = map[int]int{}
	}
	var queue []int
	for _, j := range s.Jobs {
		if _, ok := p.alloc[j.ID]; !ok {
			queue = append(queue, j.ID)
		}
	}
	queue = p.replaceFinished(queue, active, avail)
	var types []int
	for t, n := range avail {
		if n > 0 {
			types = append(types, t)
		}
	}
	for len(queue) > 0 && len(types) > 0 {
		j := active[queue[0]]
		queue = queue[1:]
		var cands, orig []int
		for i, t := range types {
			if avail[t] >= j.ScaleFactor {
				cands, orig = append(cands, t), append(orig, i)
			}
		}
		if len(cands) == 0 {
			break
		}
		var t, idx int
		if p.base {
			// Gavel's loop variable still holds the last type that its
			// scan of the candidate list visited.
			idx, t = p.rng.Randrange(len(cands)), types[len(types)-1]
		} else {
			best := -1.0
			for i, c := range cands {
				if j.Throughput[c] > best {
					best, t, idx = j.Throughput[c], c, i
				}
			}
		}
		if j.Throughput[t] > 0 {
			p.alloc[j.ID] = t
			avail[t] -= j.ScaleFactor
			if avail[t] == 0 {
				k := orig[idx]
				types = append(types[:k:k], types[k+1:]...)
			}
		}
	}
	return queue
}

// isolatedPolicy is Gavel's IsolatedPolicy: each type split equally over
// the m active jobs, divided by the job's scale factor, rows scaled down
// to sum to at most 1.
type isolatedPolicy struct{}

func (isolatedPolicy) Name() string { return "Isolated" }

func (isolatedPolicy) Allocate(s *State) (Allocation, error) {
	return equalSplit(s, true), nil
}

// proportionalPolicy is Gavel's ProportionalPolicy (the max-min
// normalisation): each type split equally, every row scaled by the
// largest row sum.
type proportionalPolicy struct{}

func (proportionalPolicy) Name() string { return "Proportional" }

func (proportionalPolicy) Allocate(s *State) (Allocation, error) {
	return equalSplit(s, false), nil
}

func equalSplit(s *State, isolated bool) Allocation {
	m := float64(len(s.Jobs))
	out := Allocation{}
	maxSum := 0.0
	for _, j := range s.Jobs {
		row := make([]float64, len(s.Types))
		for t := range row {
			row[t] = float64(s.Workers[t]) / m
			if isolated {
				row[t] /= float64(j.ScaleFactor)
			}
		}
		out[j.ID] = row
		maxSum = max(maxSum, rowSum(row))
	}
	for _, row := range out {
		d := maxSum
		if isolated {
			d = max(rowSum(row), 1)
		}
		if d == 0 {
			continue
		}
		for t := range row {
			row[t] /= d
		}
	}
	return out
}

// rowSum adds left to right, as numpy's row sum does for Gavel's short
// rows (the order decides last-bit ties between deficits, which decide
// round order: the other order made isolated differ from Gavel).
func rowSum(row []float64) float64 {
	if len(row) == 0 {
		return 0
	}
	sum := row[0]
	for _, v := range row[1:] {
		sum += v
	}
	return sum
}

func sortedIntKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// PairState is a pair of active jobs of the same scale factor that a
// packing policy may co-locate: A < B, and per type (State.Types order)
// the throughput of each when they share GPUs.
type PairState struct {
	A, B       int
	Throughput [][2]float64
}

// PackingPolicy is a policy that also allocates time to pairs of jobs
// sharing GPUs (Gavel's "Packing" policies).
type PackingPolicy interface {
	Policy
	AllocatePacked(s *State, pairs []PairState) (Allocation, map[[2]int][]float64, error)
}

// replaceFinished is Gavel's pass over the previous allocation: a job that
// finished hands its type to the head of the queue when it fits there
// (counting only the jobs seen so far, as Gavel does), and the running
// jobs' GPUs are subtracted.
func (p *fifoPolicy) replaceFinished(queue []int, active map[int]*StateJob, avail []int) []int {
	for _, id := range sortedIntKeys(p.alloc) {
		t := p.alloc[id]
		if active[id] == nil {
			if len(queue) > 0 {
				next := active[queue[0]]
				if next.ScaleFactor <= avail[t] && next.Throughput[t] > 0 {
					queue = queue[1:]
					p.alloc[next.ID] = t
					avail[t] -= next.ScaleFactor
				}
			}
			delete(p.alloc, id)
		} else {
			avail[t] -= active[id].ScaleFactor
		}
	}
	return queue
}
