package gavel

import (
	"fmt"
	"math"
	"sort"
)

// alloxPolicy is Gavel's AlloXPolicy (policies/allox.py, after AlloX,
// EuroSys'20): jobs already holding one whole worker keep it; the others
// (oldest first, at most max(α·m, n) of them) are matched to the free
// workers by a min-cost assignment where placing job i k-th from last on
// worker w costs k × (remaining steps ÷ throughput on w's type) + time
// since i's arrival, which minimises the sum of completion times on
// unrelated machines; each worker's first job gets that worker's type
// (allocation 1.0). Single-GPU jobs only, as in Gavel.
//
// The assignment is solved exactly (shortest augmenting paths with
// potentials, the method behind scipy's linear_sum_assignment that Gavel
// calls); where several assignments are optimal, the one chosen may
// differ from scipy's, so allox is compared with Gavel by its mean
// figures, not job by job.
type alloxPolicy struct {
	alpha float64
	prev  Allocation
}

func (p *alloxPolicy) Name() string { return "AlloX_Perf" }

func (p *alloxPolicy) Allocate(s *State) (Allocation, error) {
	held, waiting, err := p.split(s)
	if err != nil {
		return nil, err
	}
	// The free workers, numbered type by type in s.Types' order.
	var wtype []int
	for t := range s.Types {
		free := s.Workers[t]
		for _, j := range held {
			if p.prev[j.ID][t] == 1 {
				free--
			}
		}
		for k := 0; k < free; k++ {
			wtype = append(wtype, t)
		}
	}
	n := len(wtype)
	sort.SliceStable(waiting, func(a, b int) bool { return waiting[a].TimeSinceStart > waiting[b].TimeSinceStart })
	if keep := max(int(p.alpha*float64(len(waiting))), n); keep < len(waiting) {
		waiting = waiting[:keep]
	}
	alloc := Allocation{}
	for _, j := range s.Jobs {
		row := make([]float64, len(s.Types))
		if prev, ok := p.prev[j.ID]; ok {
			copy(row, prev)
		}
		alloc[j.ID] = row
	}
	if m := len(waiting); m > 0 && n > 0 {
		cost := alloxCost(waiting, wtype)
		col4row := assign(m, m*n, cost)
		first := make([]int, n) // per worker: the row placed first, and its order
		order := make([]int, n)
		for w := range first {
			first[w], order[w] = -1, -1
		}
		for i, c := range col4row {
			// Order k (column block k) is k-th from last: the largest k runs first.
			if w, k := c%n, c/n; k > order[w] {
				first[w], order[w] = i, k
			}
		}
		for w, i := range first {
			if i >= 0 {
				alloc[waiting[i].ID][wtype[w]] = 1
			}
		}
	}
	p.prev = alloc
	return alloc, nil
}

// split checks the scale factors and sorts the jobs into those whose
// previous allocation is one whole worker and the others.
func (p *alloxPolicy) split(s *State) (held, waiting []StateJob, err error) {
	for _, j := range s.Jobs {
		if j.ScaleFactor != 1 {
			return nil, nil, fmt.Errorf("allox: job %d has scale factor %d: AlloX places single-GPU jobs only", j.ID, j.ScaleFactor)
		}
		total := 0.0
		for _, x := range p.prev[j.ID] {
			total += x
		}
		if _, ok := p.prev[j.ID]; ok && total == 1 {
			held = append(held, j)
		} else {
			waiting = append(waiting, j)
		}
	}
	return held, waiting, nil
}

// alloxCost is Gavel's q + d: column k·n + w costs (k+1) × remaining steps ÷
// throughput on worker w's type (a zero throughput counts as 1e-10 steps/s,
// as Gavel's) + the job's time since arrival.
func alloxCost(jobs []StateJob, wtype []int) func(i, c int) float64 {
	n := len(wtype)
	return func(i, c int) float64 {
		j := jobs[i]
		tput := j.Throughput[wtype[c%n]]
		if tput == 0 {
			tput = 1e-10
		}
		return float64(c/n+1)*j.RemainingSteps/tput + j.TimeSinceStart
	}
}

// assign solves the rectangular assignment problem: rows 0..nr-1 each to a
// distinct column of 0..nc-1 (nr ≤ nc) at the least total cost(i, c). It
// grows the matching one row at a time along a shortest augmenting path
// under dual potentials u, v (reduced costs stay ≥ 0), as Jonker and
// Volgenant's method and scipy's linear_sum_assignment do; O(nr² · nc).
// It returns each row's column.
func assign(nr, nc int, cost func(i, c int) float64) []int {
	u, v := make([]float64, nr), make([]float64, nc)
	col4row, row4col := make([]int, nr), make([]int, nc)
	for i := range col4row {
		col4row[i] = -1
	}
	for c := range row4col {
		row4col[c] = -1
	}
	shortest, path := make([]float64, nc), make([]int, nc)
	inRow, inCol := make([]bool, nr), make([]bool, nc)
	remaining := make([]int, nc)
	for cur := 0; cur < nr; cur++ {
		for c := range shortest {
			shortest[c], inCol[c], remaining[c] = math.Inf(1), false, nc-1-c
		}
		for r := range inRow {
			inRow[r] = false
		}
		minVal, i, sink, left := 0.0, cur, -1, nc
		for sink < 0 {
			inRow[i] = true
			best, lowest := -1, math.Inf(1)
			for k := 0; k < left; k++ {
				c := remaining[k]
				if r := minVal + cost(i, c) - u[i] - v[c]; r < shortest[c] {
					path[c], shortest[c] = i, r
				}
				if shortest[c] < lowest || (shortest[c] == lowest && row4col[c] < 0) {
					lowest, best = shortest[c], k
				}
			}
			minVal = lowest
			c := remaining[best]
			if row4col[c] < 0 {
				sink = c
			} else {
				i = row4col[c]
			}
			inCol[c] = true
			left--
			remaining[best] = remaining[left]
		}
		u[cur] += minVal
		for r := range inRow {
			if inRow[r] && r != cur {
				u[r] += minVal - shortest[col4row[r]]
			}
		}
		for c := range inCol {
			if inCol[c] {
				v[c] -= minVal - shortest[c]
			}
		}
		for c := sink; ; {
			r := path[c]
			row4col[c] = r
			col4row[r], c = c, col4row[r]
			if r == cur {
				break
			}
		}
	}
	return col4row
}
