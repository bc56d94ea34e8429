package gavel

import (
	"fmt"

	"github.com/synergy-sched/synergy/scheduler/gavel/lp"
)

// PackedPolicyNames are Gavel's space-sharing policies: they allocate time to pairs of jobs
// on one GPU set as well as to single jobs (the mechanism's pair entries).
var PackedPolicyNames = []string{"fifo_packed", lp.FinishTimeFairnessPacked, lp.MaxMinFairnessPacked, lp.MinTotalDurationPacked}

// packedLPPolicy is one of Gavel's ...PolicyWithPacking LP policies, solved by package lp over
// classes of interchangeable jobs (docs/gavel-lp.md, "Space sharing"); its tracker keeps
// finish-time fairness's cumulative isolated time between allocations.
type packedLPPolicy struct {
	policy string
	ftf    *lp.FTFTracker
}

func (p packedLPPolicy) Name() string {
	return map[string]string{lp.MaxMinFairnessPacked: "MaxMinFairness_Packing",
		lp.FinishTimeFairnessPacked: "FinishTimeFairness_Packing", lp.MinTotalDurationPacked: "MinTotalDuration_Packing"}[p.policy]
}

func (p packedLPPolicy) Allocate(*State) (Allocation, error) {
	return nil, fmt.Errorf("%s allocates pairs: use AllocatePacked", p.policy)
}

// AllocatePacked returns every active job's row and the rows of the pairs that get time
// (pairs left out get none).
func (p packedLPPolicy) AllocatePacked(s *State, pairs []PairState) (Allocation, map[[2]int][]float64, error) {
	if len(s.Jobs) == 0 {
		return Allocation{}, map[[2]int][]float64{}, nil
	}
	prob := lp.PackedProblem{Problem: s.lpProblem(), Pairs: make([]lp.Pair, 0, len(pairs))}
	maxID := 0
	for _, j := range s.Jobs {
		maxID = max(maxID, j.ID)
	}
	index := make([]int, maxID+1) // job id → position + 1 (0: not active)
	for i, j := range s.Jobs {
		index[j.ID] = i + 1
	}
	pos := func(id int) int {
		if id < 0 || id > maxID {
			return -1
		}
		return index[id] - 1
	}
	for _, pr := range pairs {
		a, b := pos(pr.A), pos(pr.B)
		if a < 0 || b < 0 {
			return nil, nil, fmt.Errorf("%s: pair (%d, %d) names a job that is not active", p.policy, pr.A, pr.B)
		}
		prob.Pairs = append(prob.Pairs, lp.Pair{A: a, B: b, Throughput: pr.Throughput})
	}
	sol, err := p.ftf.SolvePacked(p.policy, prob, lp.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.policy, err)
	}
	single := Allocation{}
	for i, j := range s.Jobs {
		single[j.ID] = sol.X[i]
	}
	packed := map[[2]int][]float64{}
	for i, pr := range pairs {
		if rowSum(sol.Pairs[i]) > 0 {
			packed[[2]int{pr.A, pr.B}] = sol.Pairs[i]
		}
	}
	return single, packed, nil
}

// fifoPackedPolicy is Gavel's FIFOPolicyWithPacking (FIFOPolicy in 'packing' mode): fifo_perf's
// allocation from scratch, then the jobs still queued, in order, are each co-located with the
// running single job (same scale factor, on that job's type) whose pair has the largest summed
// normalised throughput (Σ packed/isolated over the members), if it exceeds the threshold
// (1.5); the first queued job that finds none ends the packing (no job jumps the queue).
type fifoPackedPolicy struct {
	fifo      fifoPolicy
	threshold float64
}

func newFIFOPacked() *fifoPackedPolicy {
	return &fifoPackedPolicy{fifo: fifoPolicy{name: "FIFO_Packing", alloc: map[int]int{}}, threshold: 1.5}
}

func (p *fifoPackedPolicy) Name() string { return "FIFO_Packing" }

func (p *fifoPackedPolicy) Allocate(*State) (Allocation, error) {
	return nil, fmt.Errorf("fifo_packed allocates pairs: use AllocatePacked")
}

func (p *fifoPackedPolicy) AllocatePacked(s *State, pairs []PairState) (Allocation, map[[2]int][]float64, error) {
	queue := p.fifo.assign(s)
	jobs := map[int]*StateJob{}
	for i := range s.Jobs {
		jobs[s.Jobs[i].ID] = &s.Jobs[i]
	}
	tput := map[[2]int][][2]float64{}
	for _, pr := range pairs {
		tput[[2]int{pr.A, pr.B}] = pr.Throughput
	}
	merged := map[[2]int]int{} // pair → type
	inPair := map[int]bool{}
	for _, id := range queue {
		best, with := p.threshold, -1
		for _, sid := range sortedIntKeys(p.fifo.alloc) {
			if inPair[sid] || jobs[sid].ScaleFactor != jobs[id].ScaleFactor {
				continue
			}
			t := p.fifo.alloc[sid]
			key := [2]int{min(sid, id), max(sid, id)}
			tp, ok := tput[key]
			if !ok {
				continue
			}
			norm := 0.0
			for i, m := range key {
				if tp[t][i] > 0 && jobs[m].Throughput[t] > 0 {
					norm += tp[t][i] / jobs[m].Throughput[t]
				}
			}
			if norm > best {
				best, with = norm, sid
			}
		}
		if with < 0 {
			break
		}
		merged[[2]int{min(with, id), max(with, id)}] = p.fifo.alloc[with]
		inPair[with] = true
	}
	single := Allocation{}
	for _, j := range s.Jobs {
		row := make([]float64, len(s.Types))
		if t, ok := p.fifo.alloc[j.ID]; ok && !inPair[j.ID] {
			row[t] = 1
		}
		single[j.ID] = row
	}
	packed := map[[2]int][]float64{}
	for k, t := range merged {
		row := make([]float64, len(s.Types))
		row[t] = 1
		packed[k] = row
	}
	return single, packed, nil
}
