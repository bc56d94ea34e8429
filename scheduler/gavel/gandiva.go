package gavel

import (
	"fmt"
	"slices"
	"sort"
)

// gandivaPolicy is Gavel's GandivaPolicy (a baseline modelled on
// Gandiva's introspective packing): when the jobs' GPUs fit the cluster,
// time is split equally over the jobs; otherwise jobs are paired at
// random (random.Random(seed).sample, only equal scale factors), a pair is
// kept while its normalised packed throughput summed over the types stays
// ≥ 1, and time is split equally over the pairs and the unpaired jobs. It
// ignores heterogeneity.
type gandivaPolicy struct {
	rng      *PyRandom
	assigned map[int]gandivaComb // job → its combination
	// allocateSparse's lookups, kept between calls (cleared in each).
	jobs     map[int]*StateJob
	pairTput map[[2]int][][2]float64
}

type gandivaComb struct {
	pair  [2]int // pair[1] = -1: the job alone
	other int    // the partner, -1 when alone
}

func (g *gandivaPolicy) Name() string { return "Gandiva_Packing" }

func (g *gandivaPolicy) Allocate(*State) (Allocation, error) {
	return nil, fmt.Errorf("gandiva allocates pairs: use AllocatePacked")
}

var _ sparsePackingPolicy = (*gandivaPolicy)(nil)

// AllocatePacked returns a row for every job and every listed pair, as Gavel's does (a pair
// outside the combinations gets zeros: a round may still place it when it picks it with
// priority 0): allocateSparse's rows, with the listed pairs' zero rows added (they share one
// read-only row).
func (g *gandivaPolicy) AllocatePacked(s *State, pairs []PairState) (Allocation, map[[2]int][]float64, error) {
	find := pairFinder(pairs)
	single, packed, err := g.allocateSparse(s, func(a, b int) ([][2]float64, bool) {
		p, ok := find([2]int{a, b})
		return p.Throughput, ok
	})
	if err != nil {
		return nil, nil, err
	}
	zero := make([]float64, len(s.Types))
	for _, p := range pairs {
		if k := [2]int{p.A, p.B}; packed[k] == nil {
			packed[k] = zero
		}
	}
	return single, packed, nil
}

// allocateSparse is the allocation with only the combinations' pair rows (every other pair
// has a zero row) and only the assigned pairs' throughputs looked up: a few hundred of the
// hundreds of thousands of pairs of 1,000 jobs.
func (g *gandivaPolicy) allocateSparse(s *State, pair pairLookup) (Allocation, map[[2]int][]float64, error) {
	if g.jobs == nil {
		g.jobs, g.pairTput = map[int]*StateJob{}, map[[2]int][][2]float64{}
	}
	jobs, pairTput := g.jobs, g.pairTput // kept between calls: cleared, not made again
	clear(jobs)
	clear(pairTput)
	for i := range s.Jobs {
		jobs[s.Jobs[i].ID] = &s.Jobs[i]
	}
	// Only the pairs already assigned are looked up (forget drops those of a job that left
	// without).
	for _, c := range g.assigned {
		if c.pair[1] >= 0 && jobs[c.pair[0]] != nil && jobs[c.pair[1]] != nil {
			if tp, ok := pair(c.pair[0], c.pair[1]); ok {
				pairTput[c.pair] = tp
			}
		}
	}
	g.forget(jobs, pairTput)
	requested, available := 0, 0
	for _, j := range s.Jobs {
		requested += j.ScaleFactor
	}
	for _, w := range s.Workers {
		available += w
	}
	var combos [][2]int
	if requested <= available {
		for _, j := range s.Jobs {
			combos = append(combos, [2]int{j.ID, -1})
		}
	} else {
		g.pairUp(s, jobs)
		for id, c := range g.assigned {
			if c.pair[0] == id { // a pair once, from its first job
				combos = append(combos, c.pair)
			}
		}
		slices.SortFunc(combos, func(a, b [2]int) int {
			switch ka, kb := (ckey{a[0], a[1]}), (ckey{b[0], b[1]}); {
			case ka.less(kb):
				return -1
			case kb.less(ka):
				return 1
			}
			return 0
		})
	}
	// Every row is a slice of one array (a job alone and unpaired keeps its zeros).
	nt := len(s.Types)
	back := make([]float64, nt*(len(s.Jobs)+len(combos)))
	single := make(Allocation, len(s.Jobs))
	for _, j := range s.Jobs {
		single[j.ID], back = back[:nt:nt], back[nt:]
	}
	packed := map[[2]int][]float64{}
	m := float64(len(combos))
	for _, c := range combos {
		row := back[:nt:nt]
		back = back[nt:]
		sf := float64(jobs[c[0]].ScaleFactor)
		for t := range row {
			row[t] = float64(s.Workers[t]) / m / sf
		}
		d := max(rowSum(row), 1)
		for t := range row {
			row[t] /= d
		}
		if c[1] < 0 {
			single[c[0]] = row
		} else {
			packed[c] = row
		}
	}
	return single, packed, nil
}

// pairFinder returns a lookup of a listed pair (a < b): a binary search in the simulator's
// order (by b, then a: a job's pairs are made when it arrives, with every active job); if a
// pair is not where the search ends and the list is not in that order, every later lookup goes
// to a map of the list, built once.
func pairFinder(pairs []PairState) func(k [2]int) (PairState, bool) {
	var index map[[2]int]int
	ordered, checked := true, false
	return func(k [2]int) (PairState, bool) {
		if ordered {
			i := sort.Search(len(pairs), func(i int) bool {
				p := pairs[i]
				return p.B > k[1] || (p.B == k[1] && p.A >= k[0])
			})
			if i < len(pairs) && pairs[i].A == k[0] && pairs[i].B == k[1] {
				return pairs[i], true
			}
			if !checked {
				checked = true
				for i := 1; i < len(pairs) && ordered; i++ {
					p, q := pairs[i-1], pairs[i]
					ordered = p.B < q.B || (p.B == q.B && p.A < q.A)
				}
			}
			if ordered {
				return PairState{}, false
			}
			index = make(map[[2]int]int, len(pairs))
			for i, p := range pairs {
				index[[2]int{p.A, p.B}] = i
			}
		}
		i, ok := index[k]
		if !ok {
			return PairState{}, false
		}
		return pairs[i], true
	}
}

// forget drops combinations whose jobs left, and pairs whose normalised
// packed throughput (summed over every type) is below 1; a job alone is
// always dropped (its normalised packed throughput is 0), to be paired
// again.
func (g *gandivaPolicy) forget(jobs map[int]*StateJob, pairTput map[[2]int][][2]float64) {
	var drop []int
	for id, c := range g.assigned {
		switch {
		case jobs[id] == nil:
			drop = append(drop, id, c.other)
		case c.other >= 0 && jobs[c.other] == nil:
			drop = append(drop, id, c.other)
		case normalisedPacked(c.pair, jobs, pairTput) < 1:
			drop = append(drop, id, c.other)
		}
	}
	for _, id := range drop {
		if id >= 0 {
			delete(g.assigned, id)
		}
	}
}

func normalisedPacked(pair [2]int, jobs map[int]*StateJob, pairTput map[[2]int][][2]float64) float64 {
	if pair[1] < 0 {
		return 0
	}
	tp, ok := pairTput[pair]
	if !ok {
		return 0
	}
	sum := 0.0
	for t, p := range tp {
		for i, m := range pair {
			if p[i] <= 0 {
				return 0
			}
			sum += p[i] / jobs[m].Throughput[t]
		}
	}
	return sum
}

// pairUp pairs the jobs not yet in a combination at random, as Gavel
// does: up to n draws of two jobs (random.sample), a draw of different
// scale factors wasted; the rest run alone.
func (g *gandivaPolicy) pairUp(s *State, jobs map[int]*StateJob) {
	var free []int
	for _, j := range s.Jobs {
		if _, ok := g.assigned[j.ID]; !ok {
			free = append(free, j.ID)
		}
	}
	n := len(free)
	for i := 0; len(free) > 1 && i < n; i++ {
		idx := g.rng.Sample(len(free), 2)
		a, b := free[idx[0]], free[idx[1]]
		if jobs[a].ScaleFactor != jobs[b].ScaleFactor {
			continue
		}
		free = removeInt(removeInt(free, a), b)
		p := [2]int{min(a, b), max(a, b)}
		g.assigned[a] = gandivaComb{p, b}
		g.assigned[b] = gandivaComb{p, a}
	}
	for _, id := range free {
		g.assigned[id] = gandivaComb{[2]int{id, -1}, -1}
	}
}

func removeInt(xs []int, v int) []int {
	for i, x := range xs {
		if x == v {
			return append(xs[:i:i], xs[i+1:]...)
		}
	}
	return xs
}
