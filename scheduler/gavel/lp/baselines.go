package lp

import "strings"

// throughputsFor returns the throughput matrix the named policy optimises over: the jobs' own
// rows for the heterogeneity-aware (_perf) policies, and the agnostic rewrite otherwise.
func throughputsFor(policy string, p *Problem, opts Options) [][]float64 {
	t := p.throughputs()
	switch policy {
	case MaxMinFairness:
		// Gavel (max_min_fairness.py, MaxMinFairnessPolicy): every entry becomes 1.0.
		for _, row := range t {
			for j := range row {
				if !opts.AgnosticCorrected || row[j] > 0 {
					row[j] = 1
				}
			}
		}
	case FinishTimeFairness, MinTotalDuration:
		if opts.AgnosticCorrected {
			meanOverCluster(t, p.Workers)
		} else {
			ref := referenceType(p.Types, opts.ReferenceType)
			for _, row := range t {
				v := row[ref]
				for j := range row {
					row[j] = v
				}
			}
		}
	}
	return t
}

// meanOverCluster replaces each job's throughputs, where positive, by its mean over the
// cluster's GPUs: Σ_j workers_j·T_j / Σ_j workers_j.
func meanOverCluster(t [][]float64, workers []int) {
	total := 0
	for _, w := range workers {
		total += w
	}
	for _, row := range t {
		mean := 0.0
		if total > 0 {
			for j, v := range row {
				mean += float64(workers[j]) * v
			}
			mean /= float64(total)
		}
		for j := range row {
			if row[j] > 0 {
				row[j] = mean
			}
		}
	}
}

// referenceType returns the index of the type the faithful agnostic FTF and makespan copy.
func referenceType(types []string, name string) int {
	j, _ := ReferenceTypeIndex(types, Options{ReferenceType: name})
	return j
}

// ReferenceTypeIndex says which type the faithful agnostic FTF and makespan copy, and whether
// it was found by name (false: no type matched, Types[0] is used).
func ReferenceTypeIndex(types []string, opts Options) (int, bool) {
	name := opts.ReferenceType
	if name == "" {
		name = "v100"
	}
	for j, t := range types {
		if strings.EqualFold(t, name) {
			return j, true
		}
	}
	return 0, false
}

// proportionalThroughputs is Gavel's ProportionalPolicy throughput (proportional.py): every job
// gets workers_j/m of each type, rows rescaled by the largest row sum, so each job's share of
// type j is workers_j / Σ workers whatever m is. Result: Σ_j T_mj·workers_j/Σ workers.
func proportionalThroughputs(t [][]float64, workers []int) []float64 {
	total := 0.0
	for _, w := range workers {
		total += float64(w)
	}
	out := make([]float64, len(t))
	if total == 0 {
		return out
	}
	for m, row := range t {
		for j, v := range row {
			out[m] += v * float64(workers[j]) / total
		}
	}
	return out
}

// isolatedThroughputs is Gavel's IsolatedPolicy throughput (isolated.py): x_mj =
// (workers_j/n)/scale_factor_m, the row divided by max(1, its sum); result Σ_j T_mj·x_mj.
// n counts every job of the problem.
func isolatedThroughputs(t [][]float64, p *Problem) []float64 {
	n := float64(len(p.Jobs))
	out := make([]float64, len(t))
	for m, row := range t {
		sf := float64(p.Jobs[m].ScaleFactor)
		sum, tp := 0.0, 0.0
		for j, v := range row {
			x := float64(p.Workers[j]) / n / sf
			sum += x
			tp += v * x
		}
		if sum > 1 {
			tp /= sum
		}
		out[m] = tp
	}
	return out
}
