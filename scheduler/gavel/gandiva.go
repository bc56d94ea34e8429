package gavel

import (
	"fmt"
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
	pairs    pairRows            // the pair rows of the last allocation
}

type gandivaComb struct {
	pair  [2]int // pair[1] = -1: the job alone
	other int    // the partner, -1 when alone
}

func (g *gandivaPolicy) Name() string { return "Gandiva_Packing" }

func (g *gandivaPolicy) Allocate(*State) (Allocation, error) {
	return nil, fmt.Errorf("gandiva allocates pairs: use AllocatePacked")
}

// AllocatePacked returns a row for every job and every listed pair, as Gavel's does (a pair
// outside the combinations gets zeros: a round may still place it when it picks it with
// priority 0). Only the assigned pairs' throughputs are read, and the pair rows are kept from
// one allocation to the next (pairRows): the map returned is the policy's own, valid until its
// next call, and every row is read-only (the pairs without time share one).
func (g *gandivaPolicy) AllocatePacked(s *State, pairs []PairState) (Allocation, map[[2]int][]float64, error) {
	jobs := make(map[int]*StateJob, len(s.Jobs))
	for i := range s.Jobs {
		jobs[s.Jobs[i].ID] = &s.Jobs[i]
	}
	// Only the pairs already assigned are looked up (forget drops those of a job that left
	// without).
	pairTput := map[[2]int][][2]float64{}
	find := pairFinder(pairs)
	for _, c := range g.assigned {
		if c.pair[1] >= 0 && jobs[c.pair[0]] != nil && jobs[c.pair[1]] != nil {
			if p, ok := find(c.pair); ok {
				pairTput[c.pair] = p.Throughput
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
		seen := map[[2]int]bool{}
		for _, c := range g.assigned {
			if !seen[c.pair] {
				seen[c.pair] = true
				combos = append(combos, c.pair)
			}
		}
		sort.Slice(combos, func(a, b int) bool {
			return ckey{combos[a][0], combos[a][1]}.less(ckey{combos[b][0], combos[b][1]})
		})
	}
	single := Allocation{}
	for _, j := range s.Jobs {
		single[j.ID] = make([]float64, len(s.Types))
	}
	packed := g.pairs.update(s, pairs)
	m := float64(len(combos))
	for _, c := range combos {
		row := make([]float64, len(s.Types))
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
			g.pairs.set(c, row)
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

// pairRows is the pair rows of gandiva's allocations, kept from one to the next: a zero row
// for every pair listed, the combinations' rows set over them. The pairs listed are every two
// active jobs of one scale factor (PairState), so only the pairs of the jobs that left are
// dropped and those of the jobs that came added, instead of hundreds of thousands of map
// entries made per allocation; a list that is not every such pair (its length says so) is
// taken as it is.
type pairRows struct {
	rows     map[[2]int][]float64
	sf       map[int]int // the jobs the rows are for → scale factor
	zero     []float64   // the row of every pair without time
	given    []setRow    // the rows set since the last update
	fromList int         // updates that took the rows from the list (one not of every pair)
}

type setRow struct {
	key    [2]int
	listed bool // the pair had a zero row
}

// update undoes the last allocation's rows and brings the zero rows to the jobs of s and the
// pairs listed.
func (z *pairRows) update(s *State, pairs []PairState) map[[2]int][]float64 {
	if z.rows == nil || len(z.zero) != len(s.Types) {
		z.rows, z.sf, z.zero, z.given = map[[2]int][]float64{}, map[int]int{}, make([]float64, len(s.Types)), nil
	}
	for _, r := range z.given {
		if r.listed {
			z.rows[r.key] = z.zero
		} else {
			delete(z.rows, r.key)
		}
	}
	z.given = z.given[:0]
	now := make(map[int]bool, len(s.Jobs))
	for _, j := range s.Jobs {
		now[j.ID] = true
	}
	for id, sf := range z.sf {
		if now[id] {
			continue
		}
		for o, osf := range z.sf {
			if osf == sf {
				delete(z.rows, [2]int{min(id, o), max(id, o)})
			}
		}
		delete(z.sf, id)
	}
	for _, j := range s.Jobs {
		if _, ok := z.sf[j.ID]; ok {
			continue
		}
		for _, o := range s.Jobs {
			if o.ID != j.ID && o.ScaleFactor == j.ScaleFactor {
				z.rows[[2]int{min(j.ID, o.ID), max(j.ID, o.ID)}] = z.zero
			}
		}
		z.sf[j.ID] = j.ScaleFactor
	}
	if len(z.rows) != len(pairs) {
		z.fromList++
		clear(z.rows)
		for _, p := range pairs {
			z.rows[[2]int{p.A, p.B}] = z.zero
		}
	}
	return z.rows
}

// set gives pair k its row until the next update.
func (z *pairRows) set(k [2]int, row []float64) {
	_, listed := z.rows[k]
	z.rows[k] = row
	z.given = append(z.given, setRow{k, listed})
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
