package lp

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MaxMinFairnessPacked is Gavel's MaxMinFairnessPolicyWithPacking (max_min_fairness.py).
const MaxMinFairnessPacked = "max_min_fairness_packed"

// PackedPolicies lists the space-sharing policies SolvePacked accepts.
func PackedPolicies() []string {
	return []string{FinishTimeFairnessPacked, MaxMinFairnessPacked, MinTotalDurationPacked}
}

// Pair is two jobs that may share GPUs (Gavel's JobIdPair): indices into Problem.Jobs, of
// equal scale factors, and per type the steps/s of each while they share.
type Pair struct {
	A, B       int
	Throughput [][2]float64 // per type: [A's, B's]
}

// PackedProblem is a problem with the pairs a packing policy may co-locate.
type PackedProblem struct {
	Problem
	Pairs []Pair
}

// PackedSolution is a packed allocation: Solution.X holds each job's time alone, Pairs each
// pair's time shared (per type). A job's time alone plus its pairs' times is at most 1, and
// Σ scale factor × (singles + pairs) <= Workers per type.
type PackedSolution struct {
	Solution
	Pairs [][]float64
	// Classes is the number of job classes of the aggregated LP (jobs with equal throughputs,
	// scale factor, priority and pair throughputs with every partner are interchangeable).
	Classes int
}

// SolvePacked computes a packing policy's allocation (deterministic).
func SolvePacked(policy string, p PackedProblem, opts Options) (PackedSolution, error) {
	if err := validate(&p.Problem, MaxMinFairnessPerf, opts); err != nil {
		return PackedSolution{}, err
	}
	idx, err := validatePairs(&p)
	if err != nil {
		return PackedSolution{}, err
	}
	switch policy {
	case MaxMinFairnessPacked:
		return solveMaxMinPacked(&p, idx)
	case MinTotalDurationPacked:
		return solveMakespanPacked(&p, idx)
	case FinishTimeFairnessPacked:
		return solveFTFPacked(&p, idx)
	}
	return PackedSolution{}, fmt.Errorf("lp: unknown packing policy %q (known: %s)", policy, strings.Join(PackedPolicies(), ", "))
}

// pairIndex finds a pair by its two jobs: a dense n×n table of int32 for up to 4,096 jobs
// (at most 64 MiB), a map above.
type pairIndex struct {
	n     int
	dense []int32 // pair index + 1; 0 = none
	m     map[[2]int]int
}

func newPairIndex(n int) *pairIndex {
	if n <= 4096 {
		return &pairIndex{n: n, dense: make([]int32, n*n)}
	}
	return &pairIndex{n: n, m: map[[2]int]int{}}
}

// add records pair i of jobs a != b and says whether the two jobs already had a pair.
func (x *pairIndex) add(a, b, i int) bool {
	a, b = min(a, b), max(a, b)
	if x.dense != nil {
		dup := x.dense[a*x.n+b] != 0
		x.dense[a*x.n+b] = int32(i + 1)
		return dup
	}
	_, dup := x.m[[2]int{a, b}]
	x.m[[2]int{a, b}] = i
	return dup
}

// get returns the index of the pair of jobs a and b.
func (x *pairIndex) get(a, b int) int {
	a, b = min(a, b), max(a, b)
	if x.dense != nil {
		return int(x.dense[a*x.n+b]) - 1
	}
	return x.m[[2]int{a, b}]
}

// validatePairs checks the pairs and returns their index.
func validatePairs(p *PackedProblem) (*pairIndex, error) {
	idx := newPairIndex(len(p.Jobs))
	for i, pr := range p.Pairs {
		if pr.A < 0 || pr.B < 0 || pr.A >= len(p.Jobs) || pr.B >= len(p.Jobs) || pr.A == pr.B {
			return nil, fmt.Errorf("lp: pair %d: jobs %d and %d: want two different indices in [0, %d)", i, pr.A, pr.B, len(p.Jobs))
		}
		if idx.add(pr.A, pr.B, i) {
			return nil, fmt.Errorf("lp: pair %d: jobs %d and %d given twice", i, p.Jobs[pr.A].ID, p.Jobs[pr.B].ID)
		}
		if a, b := p.Jobs[pr.A].ScaleFactor, p.Jobs[pr.B].ScaleFactor; a != b {
			return nil, fmt.Errorf("lp: pair %d: jobs %d and %d have scale factors %d and %d; pairs need equal ones", i, p.Jobs[pr.A].ID, p.Jobs[pr.B].ID, a, b)
		}
		if len(pr.Throughput) != len(p.Types) {
			return nil, fmt.Errorf("lp: pair %d (jobs %d, %d): %d throughputs for %d types", i, p.Jobs[pr.A].ID, p.Jobs[pr.B].ID, len(pr.Throughput), len(p.Types))
		}
		for j, v := range pr.Throughput {
			for _, x := range v {
				if !(x >= 0) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("lp: pair %d (jobs %d, %d): throughput on %s is %v; want >= 0 and finite", i, p.Jobs[pr.A].ID, p.Jobs[pr.B].ID, p.Types[j], x)
				}
			}
		}
	}
	return idx, nil
}

// classPair is the set of all pairs between two classes c <= d, with the throughput (per
// type) of the c member and of the d member.
type classPair struct {
	c, d  int
	count int
	tput  [][2]float64
	bad   bool
}

// packClasses groups the jobs for which runs[m] holds into classes of interchangeable jobs:
// equal scale factor, priority weight, factor (the policy's weight of the job's throughput)
// and throughputs, and, with every other class, either
// no pairs or a pair with every member at the same throughputs (for pairs inside a class, the
// same for both members). Jobs of a class that breaks this are split into classes of their
// own until it holds (a class of one always does). Classes are numbered by first job.
func packClasses(p *PackedProblem, runs []bool, factor []float64) (classOf []int, classes [][]int, pairs []*classPair) {
	split := map[int]bool{}
	for {
		classOf, classes = groupJobs(p, runs, factor, split)
		pairs = collectClassPairs(p, classOf, len(classes))
		grown := false
		for _, q := range pairs {
			nc, nd := len(classes[q.c]), len(classes[q.d])
			want := nc * nd
			if q.c == q.d {
				want = nc * (nc - 1) / 2
			}
			if q.bad || q.count != want {
				for _, c := range []int{q.c, q.d} {
					if len(classes[c]) > 1 {
						for _, m := range classes[c] {
							split[m] = true
						}
						grown = true
					}
				}
			}
		}
		if !grown {
			return classOf, classes, pairs
		}
	}
}

// groupJobs assigns classes by scale factor, priority weight, the policy's per-job factor and
// throughputs (bit for bit).
func groupJobs(p *PackedProblem, runs []bool, factor []float64, split map[int]bool) ([]int, [][]int) {
	classOf := make([]int, len(p.Jobs))
	var classes [][]int
	ids := map[string]int{}
	var sb strings.Builder
	for m := range p.Jobs {
		classOf[m] = -1
		if !runs[m] {
			continue
		}
		jb := &p.Jobs[m]
		sb.Reset()
		if split[m] {
			sb.WriteString("#" + strconv.Itoa(m))
		} else {
			sb.WriteString(strconv.Itoa(jb.ScaleFactor) + "/" + strconv.FormatUint(math.Float64bits(jb.PriorityWeight), 16) +
				"/" + strconv.FormatUint(math.Float64bits(factor[m]), 16))
			for _, v := range jb.Throughput {
				sb.WriteString("/" + strconv.FormatUint(math.Float64bits(v), 16))
			}
		}
		c, ok := ids[sb.String()]
		if !ok {
			c = len(classes)
			ids[sb.String()] = c
			classes = append(classes, nil)
		}
		classOf[m] = c
		classes[c] = append(classes[c], m)
	}
	return classOf, classes
}

// collectClassPairs gathers the pairs between classes, sorted by (c, d), marking a class
// pair bad where its members' throughputs differ.
func collectClassPairs(p *PackedProblem, classOf []int, numClasses int) []*classPair {
	byKey := make([]*classPair, numClasses*numClasses)
	var out []*classPair
	for _, pr := range p.Pairs {
		ca, cb := classOf[pr.A], classOf[pr.B]
		if ca < 0 || cb < 0 {
			continue
		}
		tp := pr.Throughput
		if ca > cb {
			ca, cb = cb, ca
			tp = make([][2]float64, len(pr.Throughput))
			for j, v := range pr.Throughput {
				tp[j] = [2]float64{v[1], v[0]}
			}
		}
		q := byKey[ca*numClasses+cb]
		if q == nil {
			q = &classPair{c: ca, d: cb, tput: tp}
			byKey[ca*numClasses+cb] = q
			out = append(out, q)
		}
		q.count++
		for j, v := range tp {
			if v != q.tput[j] || (ca == cb && v[0] != v[1]) {
				q.bad = true
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].c != out[b].c {
			return out[a].c < out[b].c
		}
		return out[a].d < out[b].d
	})
	return out
}
