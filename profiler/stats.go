package profiler

import (
	"math"
	"sort"

	"github.com/synergy-sched/synergy/jobcontract"
)

// Estimate is a throughput estimate over a run of iterations.
type Estimate struct {
	SamplesPerS float64 // training samples over training time (within passes)
	HalfWidth   float64 // 95% confidence half-width of SamplesPerS
	Batches     int     // batch means used for the interval
	Iterations  int
	// PassBoundaries counts the passes that began inside the run, and
	// EpochOverheadS is the mean time each boundary added beyond one
	// iteration: validation, a checkpoint, loader workers started again.
	PassBoundaries int
	EpochOverheadS float64
	// Waiting says, while a point runs, what it waits for before it
	// measures or stops (its first iteration, its warm-up, a pass's end);
	// "" when it is measuring.
	Waiting string
}

// RelHalfWidth is HalfWidth / SamplesPerS (Inf when unknown).
func (e Estimate) RelHalfWidth() float64 {
	if e.SamplesPerS <= 0 || e.Batches < 2 {
		return math.Inf(1)
	}
	return e.HalfWidth / e.SamplesPerS
}

// minBatches and maxBatches bound the number of batch means.
const (
	minBatches = 5
	maxBatches = 10
)

// newPass reports whether iteration cur began a pass over the data: the
// job reports epochs (the contract's helper and the probe do) and cur's is
// not prev's. The time from prev to cur holds what the script does between
// passes (validation, a checkpoint, starting loader workers again), which is
// not training throughput.
func newPass(prev, cur jobcontract.Iteration) bool {
	return prev.Epoch != nil && cur.Epoch != nil && *prev.Epoch != *cur.Epoch
}

// Estimate computes training throughput and its 95% confidence interval
// from iterations, using the method of batch means: consecutive iterations
// are autocorrelated (a prefetch queue drains and refills), so the run is
// cut into 5–10 contiguous batches whose rates are close to independent,
// and a Student-t interval is put on their mean (Law & Kelton, Simulation
// Modeling and Analysis, §9.5.3). iters must be in order; the duration of
// iteration k is ts[k] − ts[k−1], so the first iteration only anchors time.
// The first iteration of a pass (newPass) is charged at most a typical
// in-pass iteration's time (the mean of the others): the rest of its
// interval is what the script did between passes, reported apart
// (EpochOverheadS). A script that validates and writes a checkpoint after
// every pass would otherwise read slower the more pass boundaries a point
// happened to cross.
func estimate(iters []jobcontract.Iteration) Estimate {
	n := len(iters) - 1 // durations available
	if n < 1 {
		return Estimate{Iterations: len(iters)}
	}
	e := Estimate{Iterations: n}
	dur := trainingTime(iters, &e)
	var samples, span float64
	for k := 1; k <= n; k++ {
		samples += float64(iters[k].Samples)
		span += dur[k]
	}
	if span <= 0 {
		return e
	}
	e.SamplesPerS = samples / span
	k := n / 4 // at least 4 iterations per batch
	if k > maxBatches {
		k = maxBatches
	}
	if k < minBatches {
		// Too few iterations for batch means (a point cut short by its
		// time cap): the interval is not known well enough to stop on, so
		// Batches stays 0, but the recorded half-width must not claim
		// precision: it comes from the spread of single iterations' rates.
		e.HalfWidth = iterationHalfWidth(iters, dur, e.SamplesPerS)
		return e
	}
	per := n / k
	rates := make([]float64, 0, k)
	for b := 0; b < k; b++ {
		lo := 1 + b*per
		hi := lo + per // exclusive
		if b == k-1 {
			hi = n + 1
		}
		var s, d float64
		for j := lo; j < hi; j++ {
			s += float64(iters[j].Samples)
			d += dur[j]
		}
		if d <= 0 {
			return e
		}
		rates = append(rates, s/d)
	}
	// The interval is centred on the ratio estimate; its width comes from
	// the spread of the batch rates.
	_, sd := meanSD(rates)
	e.Batches = k
	e.HalfWidth = tQuantile975(k-1) * sd / math.Sqrt(float64(k))
	return e
}

// trainingTime returns each iteration's training time (index k for
// iteration k, 1..n): ts[k] − ts[k−1], except that a pass's first
// iteration is charged at most the mean of the others; what it is not
// charged goes into e's PassBoundaries and EpochOverheadS.
func trainingTime(iters []jobcontract.Iteration, e *Estimate) []float64 {
	dur := make([]float64, len(iters))
	var inPass float64
	nIn := 0
	var gaps []int
	for k := 1; k < len(iters); k++ {
		dur[k] = iters[k].TS - iters[k-1].TS
		if newPass(iters[k-1], iters[k]) {
			gaps = append(gaps, k)
			continue
		}
		inPass += dur[k]
		nIn++
	}
	if len(gaps) == 0 || nIn == 0 {
		return dur
	}
	typical := inPass / float64(nIn)
	var over float64
	for _, k := range gaps {
		if dur[k] > typical {
			over += dur[k] - typical
			dur[k] = typical
		}
	}
	e.PassBoundaries, e.EpochOverheadS = len(gaps), over/float64(len(gaps))
	return dur
}

// iterationHalfWidth is a 95% half-width from single iterations' rates
// over their training time (Student t over n−1 degrees of freedom); with
// fewer than 3 iterations it is the whole estimate (nothing is known
// about the spread).
func iterationHalfWidth(iters []jobcontract.Iteration, dur []float64, est float64) float64 {
	var rates []float64
	for k := 1; k < len(iters); k++ {
		if dur[k] > 0 {
			rates = append(rates, float64(iters[k].Samples)/dur[k])
		}
	}
	if len(rates) < 3 {
		return est
	}
	_, sd := meanSD(rates)
	return math.Min(est, tQuantile975(len(rates)-1)*sd/math.Sqrt(float64(len(rates))))
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom (two-sided 95%), from the standard table; df > 30 uses 1.96.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df < len(table) {
		return table[df]
	}
	return 1.960
}

// iterSeconds returns the per-iteration durations of iters (len−1 values).
func iterSeconds(iters []jobcontract.Iteration) []float64 {
	if len(iters) < 2 {
		return nil
	}
	out := make([]float64, 0, len(iters)-1)
	for k := 1; k < len(iters); k++ {
		out = append(out, iters[k].TS-iters[k-1].TS)
	}
	return out
}

// percentile returns the p-th percentile (0..100) of xs by linear
// interpolation between order statistics; 0 for no data.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// dataWaitFraction is the share of wall time spent waiting for data.
func dataWaitFraction(iters []jobcontract.Iteration) float64 {
	if len(iters) < 2 {
		return 0
	}
	span := iters[len(iters)-1].TS - iters[0].TS
	if span <= 0 {
		return 0
	}
	var w float64
	for _, it := range iters[1:] {
		w += it.DataWaitS
	}
	return math.Min(1, w/span)
}

func meanStep(iters []jobcontract.Iteration) float64 {
	if len(iters) == 0 {
		return 0
	}
	var s float64
	for _, it := range iters {
		s += it.StepS
	}
	return s / float64(len(iters))
}
