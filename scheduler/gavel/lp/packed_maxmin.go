package lp

import "math"

// packedLP is the class-aggregated LP of a packing policy and how its columns map back.
type packedLP struct {
	q       *genLP
	types   []int // indices into Problem.Types, workers > 0
	classes [][]int
	pairs   []*classPair
	single  [][]int // [class][type] → column
	pairCol [][]int // [class pair][type] → column
	scaleN  []float64
	factor  []float64 // per job: its level per unit of throughput
}

// solveMaxMinPacked is Gavel's MaxMinFairnessPolicyWithPacking: maximise min_m of job m's
// normalised throughput Σ over the combinations that contain m (alone and in each pair) of
// T·sf_m/(w_m·proportional_m)·X, under the packing base constraints (a job's time alone and in
// pairs <= 1; Σ sf·X <= workers per type, a pair counted once). Jobs that cannot run on any
// type with GPUs get zero rows (Gavel divides by their zero proportional throughput).
func solveMaxMinPacked(p *PackedProblem, idx *pairIndex) (PackedSolution, error) {
	prop := proportionalThroughputs(p.throughputs(), p.Workers)
	factor := make([]float64, len(p.Jobs))
	runs := make([]bool, len(p.Jobs))
	for m := range p.Jobs {
		jb := &p.Jobs[m]
		if runs[m] = prop[m] > 0; runs[m] {
			factor[m] = float64(jb.ScaleFactor) / (jb.PriorityWeight * prop[m])
		}
	}
	sol, res, err := packedLevel(p, idx, factor, runs, 0)
	if err != nil {
		return PackedSolution{}, err
	}
	sol.Bound = res.dualOb
	return sol, nil
}

// packedLevel solves, for the jobs with runs[m], max_X min_m factor[m]·(m's throughput under X)
// when target = 0 (Solution.Objective: the level X reaches), or, when target > 0, Gavel's
// feasibility problem "every job's factor·throughput >= target" with no objective (the
// interior-point method ends near the polytope's analytic centre, as ECOS does).
//
// The LP is solved over classes of interchangeable jobs (packClasses): it is invariant under
// any permutation of the jobs of a class, so averaging an optimal X over those permutations
// gives an optimal X that is equal for the jobs of a class and for the pairs between two
// classes. Its variables are, per class and type, a job's time alone, and per class pair and
// type, the pairs' total time: the same optimum with (#classes + #class pairs) × #types
// variables instead of (#jobs + #pairs) × #types. disaggregate maps it back.
func packedLevel(p *PackedProblem, idx *pairIndex, factor []float64, runs []bool, target float64) (PackedSolution, genResult, error) {
	out := PackedSolution{Solution: Solution{X: zeroAllocation(len(p.Jobs), len(p.Types))},
		Pairs: make([][]float64, len(p.Pairs))}
	k := len(p.Types)
	backing := make([]float64, len(p.Pairs)*k)
	for i := range out.Pairs {
		out.Pairs[i] = backing[i*k : (i+1)*k : (i+1)*k]
	}
	anyType := false
	for _, w := range p.Workers {
		anyType = anyType || w > 0
	}
	if !anyType {
		return out, genResult{}, nil
	}
	_, classes, pairs := packClasses(p, runs, factor)
	out.Classes = len(classes)
	if len(classes) == 0 {
		return out, genResult{}, nil
	}
	// Levels scaled to O(1) (the largest a job could reach running alone all the time), so
	// that the relative gap tolerance means the same for makespans of 10² s and 10⁶ s.
	scale := 0.0
	for m := range p.Jobs {
		if runs[m] {
			for j, v := range p.Jobs[m].Throughput {
				if p.Workers[j] > 0 {
					scale = math.Max(scale, factor[m]*v)
				}
			}
		}
	}
	if !(scale > 0) {
		scale = 1
	}
	scaled := make([]float64, len(factor))
	for m, v := range factor {
		scaled[m] = v / scale
	}
	pl := buildPackedLP(p, classes, pairs, scaled, target/scale)
	out.LPSolves++
	res, err := solveGen(pl.q)
	res.primalObj, res.dualOb = res.primalObj*scale, res.dualOb*scale
	if err != nil {
		if res.x == nil {
			return PackedSolution{}, res, err
		}
		out.Warning = err.Error()
	}
	pl.disaggregate(res.x, idx, &out)
	fitPacked(p, &out)
	out.Objective = packedMinLevel(p, factor, runs, &out)
	return out, res, nil
}

// buildPackedLP writes the class LP. Rows: per class its row (time <= 1) and its demand
// (z − level <= 0; with a target, −level <= −target and no z), divided by its largest
// coefficient, per type its capacity (÷ workers). Columns: z; per class and type a job's time
// alone; per class pair and type the pairs' total time divided by n_q = min(n_c, n_d) (n_c/2
// inside a class), so every column is O(1). factor[m] × a throughput is job m's level per
// unit of time.
func buildPackedLP(p *PackedProblem, classes [][]int, pairs []*classPair, factor []float64, target float64) *packedLP {
	pl := &packedLP{classes: classes, pairs: pairs, factor: factor}
	for j, w := range p.Workers {
		if w > 0 {
			pl.types = append(pl.types, j)
		}
	}
	C, k := len(classes), len(pl.types)
	q := &genLP{m: 2*C + k, b: make([]float64, 2*C+k)}
	pl.q = q
	for c := 0; c < C; c++ {
		q.b[c] = 1
	}
	for jj := range pl.types {
		q.b[2*C+jj] = 1
	}
	// Demand-row scales: the largest coefficient of each class's row.
	rowScale := make([]float64, C)
	for c, js := range classes {
		m := js[0]
		for _, j := range pl.types {
			rowScale[c] = math.Max(rowScale[c], factor[m]*p.Jobs[m].Throughput[j])
		}
	}
	for _, pr := range pairs {
		for _, j := range pl.types {
			rowScale[pr.c] = math.Max(rowScale[pr.c], factor[classes[pr.c][0]]*pr.tput[j][0])
			rowScale[pr.d] = math.Max(rowScale[pr.d], factor[classes[pr.d][0]]*pr.tput[j][1])
		}
	}
	if target > 0 {
		for c := range classes {
			q.b[C+c] = -target / rowScale[c]
		}
	} else {
		zcol := make([]nzEntry, C)
		for c := range classes {
			zcol[c] = nzEntry{C + c, 1 / rowScale[c]}
		}
		q.addCol(1, zcol...)
	}
	pl.single = make([][]int, C)
	for c, js := range classes {
		m := js[0]
		n, sf := float64(len(js)), float64(p.Jobs[m].ScaleFactor)
		for jj, j := range pl.types {
			pl.single[c] = append(pl.single[c], q.addCol(0, nzEntry{c, 1},
				nzEntry{C + c, -factor[m] * p.Jobs[m].Throughput[j] / rowScale[c]},
				nzEntry{2*C + jj, n * sf / float64(p.Workers[j])}))
		}
	}
	pl.addPairCols(p, rowScale)
	return pl
}

// addPairCols adds, per class pair and type, the column of the pairs' total time ÷ n_q.
func (pl *packedLP) addPairCols(p *PackedProblem, rowScale []float64) {
	q, C := pl.q, len(pl.classes)
	pl.pairCol = make([][]int, len(pl.pairs))
	pl.scaleN = make([]float64, len(pl.pairs))
	for i, pr := range pl.pairs {
		nc, nd := float64(len(pl.classes[pr.c])), float64(len(pl.classes[pr.d]))
		mc, md := pl.classes[pr.c][0], pl.classes[pr.d][0]
		sf := float64(p.Jobs[mc].ScaleFactor)
		nq := math.Min(nc, nd)
		if pr.c == pr.d {
			nq = nc / 2
		}
		pl.scaleN[i] = nq
		for jj, j := range pl.types {
			capNZ := nzEntry{2*C + jj, sf * nq / float64(p.Workers[j])}
			var col int
			if pr.c == pr.d {
				// Each of the class's jobs spends 2·P/n_c = P/n_q in these pairs.
				col = q.addCol(0, nzEntry{pr.c, 1},
					nzEntry{C + pr.c, -pl.factor[mc] * pr.tput[j][0] / rowScale[pr.c]}, capNZ)
			} else {
				col = q.addCol(0, nzEntry{pr.c, nq / nc}, nzEntry{pr.d, nq / nd},
					nzEntry{C + pr.c, -nq / nc * pl.factor[mc] * pr.tput[j][0] / rowScale[pr.c]},
					nzEntry{C + pr.d, -nq / nd * pl.factor[md] * pr.tput[j][1] / rowScale[pr.d]}, capNZ)
			}
			pl.pairCol[i] = append(pl.pairCol[i], col)
		}
	}
}

// disaggregate maps the class solution to jobs and pairs: each job of a class gets the class's
// time alone; the pairs' total time P between classes c != d is spread so that each job of c
// spends P/n_c and each job of d P/n_d in them, over at most n_c + n_d − 1 pairs (the
// north-west-corner rule on those uniform margins, in job order); inside a class, each job
// spends 2P/n_c, over a perfect matching of consecutive jobs (n_c even) or a cycle (odd).
// Every job's row, demand and the capacities are those of the class solution, so X is optimal
// too; only few pairs get time, which the round mechanism can honour.
func (pl *packedLP) disaggregate(x []float64, idx *pairIndex, out *PackedSolution) {
	for c, js := range pl.classes {
		for jj, j := range pl.types {
			v := math.Max(x[pl.single[c][jj]], 0)
			for _, m := range js {
				out.X[m][j] = v
			}
		}
	}
	for i, pr := range pl.pairs {
		for _, w := range spread(pl.classes[pr.c], pl.classes[pr.d], pr.c == pr.d) {
			pi := idx.get(w.a, w.b)
			for jj, j := range pl.types {
				out.Pairs[pi][j] += math.Max(x[pl.pairCol[i][jj]], 0) * pl.scaleN[i] * w.frac
			}
		}
	}
}

type pairShare struct {
	a, b int
	frac float64 // share of the class pair's total time
}

// spread returns the pairs that carry a class pair's time and each one's share (shares sum to
// 1; each job of cs gets the same total share, and each of ds).
func spread(cs, ds []int, same bool) []pairShare {
	var out []pairShare
	if same {
		n := len(cs)
		if n%2 == 0 {
			for i := 0; i+1 < n; i += 2 {
				out = append(out, pairShare{cs[i], cs[i+1], 2 / float64(n)})
			}
			return out
		}
		for i := 0; i < n; i++ {
			out = append(out, pairShare{cs[i], cs[(i+1)%n], 1 / float64(n)})
		}
		return out
	}
	// Integer north-west corner: each a supplies len(ds) units, each b takes len(cs).
	nc, nd := len(cs), len(ds)
	total := float64(nc * nd)
	supply, demand := nd, nc
	for i, l := 0, 0; i < nc && l < nd; {
		u := min(supply, demand)
		out = append(out, pairShare{cs[i], ds[l], float64(u) / total})
		supply -= u
		demand -= u
		if supply == 0 {
			i, supply = i+1, nd
		}
		if demand == 0 {
			l, demand = l+1, nc
		}
	}
	return out
}

// fitPacked clips every entry to [0, 1], scales down (with its pairs) any job whose time sums
// over 1 by rounding, then any type over its workers: the invariants hold exactly.
func fitPacked(p *PackedProblem, out *PackedSolution) {
	clip := func(row []float64) {
		for j, v := range row {
			row[j] = math.Min(math.Max(v, 0), 1)
		}
	}
	sum := make([]float64, len(p.Jobs))
	for m, row := range out.X {
		clip(row)
		sum[m] += rowSum(row)
	}
	for i, row := range out.Pairs {
		clip(row)
		s := rowSum(row)
		sum[p.Pairs[i].A] += s
		sum[p.Pairs[i].B] += s
	}
	for i, row := range out.Pairs {
		if f := math.Max(sum[p.Pairs[i].A], sum[p.Pairs[i].B]); f > 1 {
			for j := range row {
				row[j] /= f
			}
		}
	}
	for m, row := range out.X {
		if sum[m] > 1 {
			for j := range row {
				row[j] /= sum[m]
			}
		}
	}
	for j, w := range p.Workers {
		used := 0.0
		for m, row := range out.X {
			used += float64(p.Jobs[m].ScaleFactor) * row[j]
		}
		for i, row := range out.Pairs {
			used += float64(p.Jobs[p.Pairs[i].A].ScaleFactor) * row[j]
		}
		if used > float64(w) {
			f := float64(w) / used
			for _, row := range out.X {
				row[j] *= f
			}
			for _, row := range out.Pairs {
				row[j] *= f
			}
		}
	}
}

// packedMinLevel returns min over the jobs that can run of their normalised throughput under
// the allocation (the objective X reaches).
func packedMinLevel(p *PackedProblem, factor []float64, runs []bool, out *PackedSolution) float64 {
	level := make([]float64, len(p.Jobs))
	for m, row := range out.X {
		for j, v := range row {
			level[m] += v * p.Jobs[m].Throughput[j]
		}
	}
	for i, row := range out.Pairs {
		pr := p.Pairs[i]
		for j, v := range row {
			level[pr.A] += v * pr.Throughput[j][0]
			level[pr.B] += v * pr.Throughput[j][1]
		}
	}
	best := math.Inf(1)
	for m := range p.Jobs {
		if runs[m] {
			best = math.Min(best, level[m]*factor[m])
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

func rowSum(row []float64) float64 {
	s := 0.0
	for _, v := range row {
		s += v
	}
	return s
}
