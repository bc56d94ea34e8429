package sensitivity

import (
	"fmt"
	"math"
	"sort"
)

// ValidateCells compares a fit without p's PhaseValidate cells with those
// cells' measurements. It returns nil when p has no successful validate
// cell.
func ValidateCells(p *Profile) (*Validation, error) {
	f, err := FitProfile(p)
	if err != nil {
		return nil, err
	}
	return validateWith(p, f), nil
}

func validateWith(p *Profile, f *Fitted) *Validation {
	var errs, base []cellErr
	for _, c := range p.Cells {
		if !c.Measured || c.Phase != PhaseValidate || c.Failure != nil || !(c.SamplesPerS > 0) {
			continue
		}
		pred, _ := f.Predict(c.CPUs, c.MemLimitBytes)
		errs = append(errs, cellErr{c.CPUs, c.MemLimitBytes, pctErr(pred, c.SamplesPerS)})
		if b, ok := MinIOPredict(p, c.CPUs, c.MemLimitBytes); ok {
			base = append(base, cellErr{c.CPUs, c.MemLimitBytes, pctErr(b, c.SamplesPerS)})
		}
	}
	return summarise(errs, base)
}

type cellErr struct {
	cpus   float64
	mem    int64
	errPct float64 // absolute % error
}

func summarise(errs, base []cellErr) *Validation {
	if len(errs) == 0 {
		return nil
	}
	v := &Validation{Cells: len(errs), WorstErrPct: -1}
	for _, e := range errs {
		v.MAPEPct += e.errPct
		if e.errPct > v.WorstErrPct {
			v.WorstErrPct, v.WorstCPUs, v.WorstMemBytes = e.errPct, e.cpus, e.mem
		}
	}
	v.MAPEPct /= float64(len(errs))
	if len(base) == len(errs) {
		for _, e := range base {
			v.BaselineMAPEPct += e.errPct
		}
		v.BaselineMAPEPct /= float64(len(base))
		v.BaselineName = BaselineMinIO
	}
	return v
}

// pctErr is |pred − meas| / meas in percent.
func pctErr(pred, meas float64) float64 { return math.Abs(pred-meas) / meas * 100 }

// Holdout validates the fit by leave-k-out over p's measured, successful,
// non-validate cells: every subset of k cells is held out in turn (or, when
// there are more than maxHoldoutFits subsets, k-cell windows of the sorted
// cells, rotated one cell at a time), the model is fitted on the rest and
// each held-out cell's error is averaged over the fits it was left out of.
// Subsets whose fit fails (no CPU point left) are skipped and counted in
// the returned skipped figure.
func Holdout(p *Profile, k int) (v *Validation, skipped int, err error) {
	if k < 1 {
		return nil, 0, fmt.Errorf("holdout: k = %d, want at least 1", k)
	}
	var pool []Cell
	for _, c := range fitCellsOf(p, nil) {
		if c.Failure == nil && c.SamplesPerS > 0 {
			pool = append(pool, c)
		}
	}
	if k >= len(pool) {
		return nil, 0, fmt.Errorf("holdout: k = %d leaves nothing to fit (%d measured cells)", k, len(pool))
	}
	sort.SliceStable(pool, func(i, j int) bool {
		if pool[i].CPUs != pool[j].CPUs {
			return pool[i].CPUs < pool[j].CPUs
		}
		return memKey(pool[i].MemLimitBytes) < memKey(pool[j].MemLimitBytes)
	})
	subsets := combinations(len(pool), k, maxHoldoutFits)
	sum := make([]float64, len(pool))
	bsum := make([]float64, len(pool))
	cnt := make([]int, len(pool))
	baseOK := true
	for _, s := range subsets {
		ex := map[[2]float64]bool{}
		for _, i := range s {
			ex[[2]float64{pool[i].CPUs, memKey(pool[i].MemLimitBytes)}] = true
		}
		cells := fitCellsOf(p, ex)
		f, err := fitCells(p, cells)
		if err != nil {
			skipped++
			continue
		}
		q := *p
		q.Cells = cells
		for _, i := range s {
			c := pool[i]
			pred, _ := f.Predict(c.CPUs, c.MemLimitBytes)
			sum[i] += pctErr(pred, c.SamplesPerS)
			if b, ok := MinIOPredict(&q, c.CPUs, c.MemLimitBytes); ok {
				bsum[i] += pctErr(b, c.SamplesPerS)
			} else {
				baseOK = false
			}
			cnt[i]++
		}
	}
	var errs, base []cellErr
	for i, c := range pool {
		if cnt[i] == 0 {
			continue
		}
		errs = append(errs, cellErr{c.CPUs, c.MemLimitBytes, sum[i] / float64(cnt[i])})
		base = append(base, cellErr{c.CPUs, c.MemLimitBytes, bsum[i] / float64(cnt[i])})
	}
	if !baseOK {
		base = nil
	}
	v = summarise(errs, base)
	if v == nil {
		return nil, skipped, fmt.Errorf("holdout: no subset of %d cells could be left out and still fit (the fit needs a CPU point)", k)
	}
	return v, skipped, nil
}

// maxHoldoutFits caps the fits Holdout makes.
const maxHoldoutFits = 5000

// combinations returns the k-subsets of 0..n-1 in lexical order, or n
// rotating windows of k consecutive indices when there are more than max.
func combinations(n, k, max int) [][]int {
	total := 1.0
	for i := 0; i < k; i++ {
		total = total * float64(n-i) / float64(i+1)
	}
	var out [][]int
	if total > float64(max) {
		for s := 0; s < n; s++ {
			w := make([]int, k)
			for i := range w {
				w[i] = (s + i) % n
			}
			out = append(out, w)
		}
		return out
	}
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		out = append(out, append([]int(nil), idx...))
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return out
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}
