package sensitivity

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// ModelMinGPUCPUFetch names the model FitProfile fits (docs/model.md):
// throughput(c, m) = min(G, P(c), F(m)).
const ModelMinGPUCPUFetch = "min-gpu-cpu-fetch/v1"

// BaselineMinIO names DS-Analyzer's what-if formula, the baseline the fit is
// compared with.
const BaselineMinIO = "minio-formula"

// Tolerances of the fit.
const (
	// bindingTol is the least relative shortfall below the CPU curve at
	// which a limited-memory cell counts as fetch-bound (the larger of it and
	// the cells' combined relative 95% intervals is used).
	bindingTol = 0.03
	// minRelCI is the floor of a measurement's relative interval when it
	// weighs points (a cell reporting ±0 must not dominate).
	minRelCI = 0.01
)

// cpuKnot is one point of the fitted CPU curve.
type cpuKnot struct {
	cpus  float64 // cores
	v     float64 // fitted samples/s
	ci    float64 // 95% half-width of the measurement, samples/s
	meas  float64 // measured samples/s (0 for the origin)
	fixed bool    // the origin: no CPU, no throughput
}

// hKnot is one calibrated point of the cache hit-fraction curve.
type hKnot struct {
	frac  float64 // cache budget / dataset, in (0, 1)
	h     float64 // hit fraction in [0, 1)
	relCI float64 // relative 95% half-width of the fetch-bound rate there
	w     float64 // weight (sum of 1/relCI² of its cells)
}

// Fitted is the model fitted to one profile: throughput(c, m) = min(G, P(c),
// F(m)) in samples/s, with c in cores and m a memory limit in bytes. P is a
// monotone concave curve through the measured CPU points (and the origin),
// F(m) = F0 / (1 − h(m)) the fetch-bound rate, F0 = BW / bytes_per_sample
// the rate when nothing hits the page cache, and h(m) the hit fraction at
// cache budget m − anon, calibrated on the measured memory points.
type Fitted struct {
	cpu []cpuKnot // ascending; cpu[0] is the origin

	gSamplesPerS float64 // GPU-bound plateau (upper bound of P)

	fetch            bool    // the fetch term is modelled (dataset and bandwidth known or observed)
	datasetBytes     float64 // D
	bytesPerSample   float64 // D / files
	bwBytesPerS      float64 // read bandwidth used for F0 (0 = unknown)
	f0SamplesPerS    float64 // fetch-bound rate at h = 0
	f0FromBW         float64 // BW / bytes_per_sample before calibration (0 = unknown)
	anonBytes        float64 // the job's own working set
	alpha            float64 // h ≈ frac^alpha between knots (1 = MinIO)
	hKnots           []hKnot // calibrated points, ascending frac, h non-decreasing
	dramBytes        float64 // where "unlimited" stands
	oomLimitBytes    int64   // largest limit that was OOM-killed (0 = none)
	fetchObservation int     // fetch-bound cells used
	boundObservation int     // non-binding limited cells used as lower bounds

	// overlap says how the CPU and fetch terms combine: false = min(P, F)
	// (workers overlap fetching and preprocessing fully), true = the
	// throughput of N loader workers cycling through a fetch station of
	// rate F and a CPU station of rate P (mean-value analysis of a closed
	// network; N = 1 gives 1/(1/P + 1/F)). Chosen by the data (see
	// chooseOverlap); min when nothing tells them apart.
	overlap bool
	gpus    int // the job's GPUs: workers = ceil(cpus / gpus)

	// caps are the fetch-bound rates observed per limit (weighted mean):
	// F is non-decreasing in m, so F(m) <= caps[j].v for every m <= caps[j].x
	// whatever the hit curve says (a shortfall it cannot explain, such as
	// one at a limit above anon + D, still binds).
	caps []xy

	// memDirect is the fallback when the dataset is unknown: fetch-bound
	// rates observed per memory limit, interpolated (no h curve).
	memDirect []xy
}

// xy is a measured value v ± ci at abscissa x.
type xy struct {
	x, v, ci float64
}

// FitProfile fits the model to p's measured, successful cells whose Phase
// is not PhaseValidate. It needs at least one such cell at unlimited memory
// (a CPU point). Source: docs/model.md; the fetch term starts from
// DS-Analyzer's formula (VLDB'21, §what-if) with the hit fraction
// calibrated on the measured memory points.
func FitProfile(p *Profile) (*Fitted, error) {
	return fitCells(p, fitCellsOf(p, nil))
}

// fitCellsOf returns the cells a fit may use: measured, not validate, and
// not excluded.
func fitCellsOf(p *Profile, exclude map[[2]float64]bool) []Cell {
	var out []Cell
	for _, c := range p.Cells {
		if !c.Measured || c.Phase == PhaseValidate {
			continue
		}
		if exclude[[2]float64{c.CPUs, memKey(c.MemLimitBytes)}] {
			continue
		}
		out = append(out, c)
	}
	return out
}

func fitCells(p *Profile, cells []Cell) (*Fitted, error) {
	f := &Fitted{dramBytes: float64(p.Host.DRAMBytes), gpus: max(p.Job.GPUs, 1)}

	// OOM-killed limits: at or below them the job does not run.
	for _, c := range cells {
		if c.Failure != nil && c.Failure.Class == FailOOMKilled && !Unlimited(c.MemLimitBytes) && c.MemLimitBytes > f.oomLimitBytes {
			f.oomLimitBytes = c.MemLimitBytes
		}
	}

	// P(c): the unlimited-memory points.
	type obs struct{ x, v, ci float64 }
	byCPU := map[float64][]obs{}
	for _, c := range cells {
		if c.Failure == nil && (Unlimited(c.MemLimitBytes) || f.cpuSaturated(c)) {
			byCPU[c.CPUs] = append(byCPU[c.CPUs], obs{c.CPUs, c.SamplesPerS, c.SamplesPerSCI95})
		}
	}
	if len(byCPU) == 0 {
		return nil, errors.New("fit: no successful measured cell at unlimited memory (a CPU point) to fit P(c) from")
	}
	f.cpu = []cpuKnot{{fixed: true}}
	for x, os := range byCPU {
		k := cpuKnot{cpus: x}
		var sw float64
		for _, o := range os {
			w := 1 / sq(relCI(o.v, o.ci))
			k.meas += w * o.v
			k.ci += w * o.ci
			sw += w
		}
		k.meas /= sw
		k.ci /= sw
		k.v = k.meas
		f.cpu = append(f.cpu, k)
	}
	sort.Slice(f.cpu, func(i, j int) bool { return f.cpu[i].cpus < f.cpu[j].cpus })
	// The origin bounds the curve below the first point but does not
	// constrain the fit: under a CFS quota a fraction of a core often runs
	// the loader below its per-core rate, so the measured curve may bend up
	// at first.
	fitConcaveMonotone(f.cpu[1:])

	// G: the step-only run's rate when there is one, else the rate with no
	// data wait, v / (1 − data_wait_fraction), the median over the cells
	// whose metrics stream reports the wait; never below the CPU curve.
	var gs []float64
	for _, c := range cells {
		if c.Failure == nil && c.Stats != nil && c.Stats.MetricsSource == MetricsStream && c.SamplesPerS > 0 &&
			c.Stats.DataWaitFraction >= 0 && c.Stats.DataWaitFraction < 0.98 {
			gs = append(gs, c.SamplesPerS/(1-c.Stats.DataWaitFraction))
		}
	}
	g := median(gs)
	if so := p.StepOnly; so != nil && so.Failure == nil && so.SamplesPerS > 0 {
		g = so.SamplesPerS // measured directly: the step with synthetic data
	}
	f.gSamplesPerS = math.Max(g, f.cpu[len(f.cpu)-1].v)

	// The job's own working set: the largest anonymous memory seen.
	for _, c := range cells {
		if c.Stats != nil && float64(c.Stats.MemAnonBytes) > f.anonBytes {
			f.anonBytes = float64(c.Stats.MemAnonBytes)
		}
	}

	f.fitFetch(p, cells)
	return f, nil
}

// fitFetch calibrates F(m) on the limited-memory cells.
func (f *Fitted) fitFetch(p *Profile, cells []Cell) {
	f.alpha = 1
	var lims []limObs
	for _, c := range cells {
		if c.Failure != nil || Unlimited(c.MemLimitBytes) {
			continue
		}
		if f.oomLimitBytes > 0 && c.MemLimitBytes <= f.oomLimitBytes {
			continue
		}
		pc, pcCI := f.cpuAt(c.CPUs)
		pc = math.Min(pc, f.gSamplesPerS)
		tol := math.Max(bindingTol, relCI(c.SamplesPerS, c.SamplesPerSCI95)+relCI(pc, pcCI))
		n := f.workersFor(c.CPUs)
		if c.Stats != nil && c.Stats.Workers > 0 {
			n = c.Stats.Workers
		}
		lims = append(lims, limObs{mem: c.MemLimitBytes, x: c.SamplesPerS, xci: c.SamplesPerSCI95, pc: pc, pcCI: pcCI, n: n, tol: tol,
			fetchBind: c.SamplesPerS < pc*(1-tol) && !f.cpuSaturated(c)})
	}
	f.overlap = chooseOverlap(lims)
	// The fetch-bound rate behind each observation, under the chosen
	// combination.
	for i := range lims {
		o := &lims[i]
		o.v, o.ci = o.x, o.xci
		if o.fetchBind && f.overlap {
			o.v = invMVA(o.n, o.pc, o.x)
			o.ci = math.Abs(invMVA(o.n, o.pc, o.x+o.xci) - o.v)
			if math.IsInf(o.ci, 0) {
				o.ci = o.v
			}
		}
	}

	capAcc := map[int64]*xy{}
	capW := map[int64]float64{}
	for _, o := range lims {
		if !o.fetchBind {
			continue
		}
		w := 1 / sq(relCI(o.v, o.ci))
		a := capAcc[o.mem]
		if a == nil {
			a = &xy{x: float64(o.mem)}
			capAcc[o.mem] = a
		}
		a.v += w * o.v
		a.ci += w * o.ci
		capW[o.mem] += w
	}
	for m, a := range capAcc {
		a.v /= capW[m]
		a.ci /= capW[m]
		f.caps = append(f.caps, *a)
	}
	sort.Slice(f.caps, func(i, j int) bool { return f.caps[i].x < f.caps[j].x })

	if p.Host.DatasetBytes <= 0 || p.Host.DatasetFiles <= 0 {
		// No dataset: only what was observed, per limit.
		for _, o := range lims {
			if o.fetchBind && o.v > 0 {
				f.memDirect = append(f.memDirect, xy{float64(o.mem), o.v, o.ci})
				f.fetchObservation++
			}
		}
		sort.Slice(f.memDirect, func(i, j int) bool { return f.memDirect[i].x < f.memDirect[j].x })
		return
	}
	f.fetch = true
	f.datasetBytes = float64(p.Host.DatasetBytes)
	f.bytesPerSample = f.datasetBytes / float64(p.Host.DatasetFiles)
	switch {
	case p.Host.ReadLimitBytesPS > 0:
		f.bwBytesPerS = float64(p.Host.ReadLimitBytesPS)
	case p.Host.ColdReadMBPerS > 0:
		f.bwBytesPerS = p.Host.ColdReadMBPerS * 1e6
	}
	if f.bwBytesPerS > 0 {
		f.f0FromBW = f.bwBytesPerS / f.bytesPerSample
	}
	f.f0SamplesPerS = f.f0FromBW

	// F0 calibration: a fetch-bound cell slower than BW / bytes_per_sample
	// says the effective bandwidth is lower (per-file overheads, a shared
	// device): F0 is the slowest fetch-bound rate then.
	for _, o := range lims {
		if fr := f.frac(float64(o.mem)); fr >= 1 {
			continue // the whole dataset fits: a shortfall here is not the fetch
		}
		if o.fetchBind && o.v > 0 && (f.f0SamplesPerS == 0 || o.v < f.f0SamplesPerS) {
			f.f0SamplesPerS = o.v
		}
	}
	if f.f0SamplesPerS == 0 {
		f.fetch = false // neither a bandwidth nor a fetch-bound cell: F does not bind
		return
	}

	// Observed hit fractions, merged per limit.
	type acc struct{ h, w, relCI float64 }
	merged := map[float64]*acc{}
	for _, o := range lims {
		if !o.fetchBind || o.v <= 0 {
			continue
		}
		fr := f.frac(float64(o.mem))
		h := clamp(1-f.f0SamplesPerS/o.v, 0, 0.999)
		rc := relCI(o.v, o.ci)
		w := 1 / sq(rc)
		a := merged[fr]
		if a == nil {
			a = &acc{}
			merged[fr] = a
		}
		a.h += w * h
		a.relCI += w * rc
		a.w += w
		f.fetchObservation++
	}
	var knots []hKnot
	for fr, a := range merged {
		if fr <= 0 || fr >= 1 {
			continue // no budget, or all of it fits: nothing to calibrate
		}
		knots = append(knots, hKnot{frac: fr, h: a.h / a.w, relCI: a.relCI / a.w, w: a.w})
	}
	sort.Slice(knots, func(i, j int) bool { return knots[i].frac < knots[j].frac })
	isotonicH(knots)

	// alpha: least squares of ln h = alpha ln frac over the knots.
	var num, den float64
	for _, k := range knots {
		if k.h > 0 {
			lf := math.Log(k.frac)
			num += k.w * math.Log(k.h) * lf
			den += k.w * lf * lf
		}
	}
	if den > 0 {
		f.alpha = clamp(num/den, 0.25, 8)
	}
	f.hKnots = knots

	// Lower bounds: a limited cell that ran at the CPU curve says F(m) was
	// at least that fast, so h(m) >= 1 − F0/P(c). Raise the curve there.
	for _, o := range lims {
		if o.fetchBind {
			continue
		}
		fr := f.frac(float64(o.mem))
		if fr <= 0 || fr >= 1 {
			continue
		}
		fLow := o.pc * (1 - relCI(o.pc, o.pcCI))
		if f.overlap {
			fLow = invMVA(o.n, o.pc, math.Min(o.x, o.pc)*(1-o.tol))
		}
		lb := clamp(1-f.f0SamplesPerS/fLow, 0, 0.999)
		if h, _ := f.hitAt(fr); h < lb {
			f.hKnots = append(f.hKnots, hKnot{frac: fr, h: lb, relCI: relCI(o.v, o.ci), w: 1 / sq(relCI(o.v, o.ci))})
			sort.Slice(f.hKnots, func(i, j int) bool { return f.hKnots[i].frac < f.hKnots[j].frac })
			f.boundObservation++
		}
	}
	// Knots at the same fraction (a bound beside an observation) merge.
	f.hKnots = mergeSameFrac(f.hKnots)
	isotonicH(f.hKnots)
}

// limObs is a measured, successful limited-memory cell as the fetch fit
// sees it.
type limObs struct {
	mem       int64
	x, xci    float64 // measured samples/s and its interval
	v, ci     float64 // the fetch-bound rate behind it (fetch-bound cells)
	pc, pcCI  float64 // the CPU curve at the cell's CPUs
	n         int     // loader workers
	tol       float64 // relative shortfall below pc that counts as fetch-bound
	fetchBind bool
}

// saturatedFrac is the share of its usable cores (min(cpus, workers)) a
// cell must have used on average to count as CPU-bound.
const saturatedFrac = 0.9

// cpuSaturated reports whether a measured cell used (nearly) all the cores
// it could: then preprocessing bound it, whatever its memory limit, so it
// measures P(c) and says nothing about the fetch. Unknown (no CPU figures)
// is false.
func (f *Fitted) cpuSaturated(c Cell) bool {
	if c.Stats == nil || c.Failure != nil {
		return false
	}
	cores := c.Stats.CPUCoresMean
	if cores <= 0 && c.Stats.WallSeconds > 0 {
		cores = c.Stats.CPUUsageSeconds / c.Stats.WallSeconds
	}
	if cores <= 0 {
		return false
	}
	n := f.workersFor(c.CPUs)
	if c.Stats.Workers > 0 {
		n = c.Stats.Workers
	}
	return cores >= saturatedFrac*math.Min(c.CPUs, float64(n))
}

// workersFor is the profiler's rule: ceil(cpus / gpus), at least 1.
func (f *Fitted) workersFor(cpus float64) int {
	return max(1, int(math.Ceil(cpus/float64(f.gpus)-1e-9)))
}

// mva is the throughput of n loader workers, each cycling through a fetch
// (a shared station of rate fRate samples/s) and preprocessing (a shared
// station of rate pRate): exact mean-value analysis of that closed network
// (Reiser & Lavenberg 1980). n = 1: 1 / (1/pRate + 1/fRate); n → ∞:
// min(pRate, fRate). Never above either rate.
func mva(n int, pRate, fRate float64) float64 {
	if !(pRate > 0) || !(fRate > 0) {
		return 0
	}
	if math.IsInf(fRate, 1) {
		return pRate
	}
	dF, dP := 1/fRate, 1/pRate
	var qF, qP, x float64
	for k := 1; k <= n; k++ {
		rF, rP := dF*(1+qF), dP*(1+qP)
		x = float64(k) / (rF + rP)
		qF, qP = x*rF, x*rP
	}
	return x
}

// invMVA returns the fetch rate F at which mva(n, pRate, F) = x (+Inf when
// x >= pRate): bisection in log F, as mva rises with F.
func invMVA(n int, pRate, x float64) float64 {
	if x >= pRate {
		return math.Inf(1)
	}
	if !(x > 0) {
		return 0
	}
	lo, hi := x, x*2
	for mva(n, pRate, hi) < x {
		hi *= 2
		if hi > 1e15 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 100; i++ {
		mid := math.Sqrt(lo * hi)
		if mva(n, pRate, mid) < x {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi)
}

// chooseOverlap decides how the CPU and fetch terms combine, from limits
// where fetch-bound cells were measured at two or more CPU counts: under
// the right combination they all imply the same F(m). For each combination
// it takes the weighted mean F per such limit and sums the squared
// relative errors of the cells' predicted rates against their
// measurements; the smaller wins. With no such limit it returns false
// (min, the model's default).
func chooseOverlap(lims []limObs) bool {
	byMem := map[int64][]limObs{}
	for _, o := range lims {
		if o.fetchBind && o.x > 0 {
			byMem[o.mem] = append(byMem[o.mem], o)
		}
	}
	sse := func(overlap bool) (float64, int) {
		var total float64
		groups := 0
		mems := make([]int64, 0, len(byMem))
		for m := range byMem {
			mems = append(mems, m)
		}
		sort.Slice(mems, func(i, j int) bool { return mems[i] < mems[j] }) // sums in a fixed order
		for _, m := range mems {
			os := byMem[m]
			distinct := false
			for _, o := range os[1:] {
				distinct = distinct || o.n != os[0].n || math.Abs(o.pc-os[0].pc) > 0.05*os[0].pc
			}
			if !distinct {
				continue
			}
			groups++
			var fw, w float64
			fs := make([]float64, len(os))
			for i, o := range os {
				fs[i] = o.x
				if overlap {
					fs[i] = invMVA(o.n, o.pc, o.x)
				}
				wi := 1 / sq(relCI(o.x, o.xci))
				fw += wi * math.Log(fs[i])
				w += wi
			}
			fm := math.Exp(fw / w)
			for _, o := range os {
				pred := math.Min(o.pc, fm)
				if overlap {
					pred = mva(o.n, o.pc, fm)
				}
				total += sq((pred-o.x)/o.x) / sq(relCI(o.x, o.xci))
			}
		}
		return total, groups
	}
	sMin, groups := sse(false)
	if groups == 0 {
		return false
	}
	sOverlap, _ := sse(true)
	return sOverlap < sMin
}

// frac is the cache budget at memory limit m (bytes, > 0) over the dataset.
func (f *Fitted) frac(m float64) float64 {
	return math.Max(m-f.anonBytes, 0) / f.datasetBytes
}

// hitAt returns the calibrated hit fraction at budget fraction fr and its
// model uncertainty (absolute, in hit fraction): the distance between the
// power-shaped curve through the knots and the straight (MinIO-shaped) one.
func (f *Fitted) hitAt(fr float64) (h, u float64) {
	if fr >= 1 {
		return 1, 0
	}
	if fr <= 0 {
		return 0, 0
	}
	pw := func(x float64) float64 { return math.Pow(x, f.alpha) }
	ks := f.hKnots
	if len(ks) == 0 {
		// Uncalibrated: MinIO's hit fraction, uncertain by how far an LRU
		// cache under a shuffled order falls below it (about frac²).
		return fr, fr - fr*fr
	}
	// Segment [a, b] holding fr, with (0, 0) and (1, 1) as the ends.
	a, b := hKnot{frac: 0, h: 0}, hKnot{frac: 1, h: 1}
	for _, k := range ks {
		if k.frac <= fr {
			a = k
		} else {
			b = k
			break
		}
	}
	if a.frac == fr {
		return a.h, 0
	}
	// The power shape between the bracketing points (through the origin
	// below the first knot, up to (1, 1) above the last).
	t := (pw(fr) - pw(a.frac)) / (pw(b.frac) - pw(a.frac))
	h = a.h + (b.h-a.h)*t
	lin := a.h + (b.h-a.h)*(fr-a.frac)/(b.frac-a.frac)
	return h, math.Abs(h - lin)
}

// cpuAt returns P(c) and its 95% half-width: between fitted knots a and b
// the concave curve lies between the chord and the lowest extension of the
// neighbouring segments (and, past the last knot, below G); the prediction
// is the middle of that band and its half-width is the model uncertainty,
// added to the measurement intervals interpolated between the knots.
func (f *Fitted) cpuAt(c float64) (v, ci float64) {
	ks := f.cpu
	n := len(ks)
	slope := func(i int) float64 { // slope of segment [i, i+1]
		return (ks[i+1].v - ks[i].v) / (ks[i+1].cpus - ks[i].cpus)
	}
	if c <= 0 {
		return 0, 0
	}
	for i := 1; i < n; i++ {
		if ks[i].cpus == c {
			return ks[i].v, ks[i].ci
		}
	}
	last := ks[n-1]
	if c > last.cpus {
		lo := last.v
		hi := f.gSamplesPerS
		if n >= 2 {
			hi = math.Min(hi, last.v+slope(n-2)*(c-last.cpus))
		}
		hi = math.Max(hi, lo)
		return (lo + hi) / 2, last.ci + (hi-lo)/2
	}
	i := sort.Search(n, func(i int) bool { return ks[i].cpus > c }) // ks[i-1].cpus < c < ks[i].cpus
	a, b := ks[i-1], ks[i]
	t := (c - a.cpus) / (b.cpus - a.cpus)
	chord := a.v + (b.v-a.v)*t
	hi := b.v // monotone
	if i+1 < n {
		hi = math.Min(hi, b.v-slope(i)*(b.cpus-c))
	}
	if i-1 >= 1 {
		hi = math.Min(hi, a.v+slope(i-2)*(c-a.cpus))
	}
	hi = math.Max(hi, chord)
	mci := a.ci + (b.ci-a.ci)*t
	if a.fixed {
		mci = b.ci * t
	}
	return (chord + hi) / 2, mci + (hi-chord)/2
}

// fetchAt returns F(m) in samples/s (+Inf when the fetch does not bind) and
// its 95% half-width.
func (f *Fitted) fetchAt(memLimitBytes int64) (v, ci float64) {
	m := float64(memLimitBytes)
	if Unlimited(memLimitBytes) {
		if f.dramBytes <= 0 {
			return math.Inf(1), 0
		}
		m = f.dramBytes
	}
	if !f.fetch && len(f.memDirect) > 0 {
		if Unlimited(memLimitBytes) {
			return math.Inf(1), 0
		}
		return interpXY(f.memDirect, m)
	}
	v, ci = math.Inf(1), 0
	fr := f.frac(m)
	if h, u := f.hitAt(fr); f.fetch && h < 1 {
		v = f.f0SamplesPerS / (1 - h)
		// Model: the rate at h ± u; measurement: the nearest knots' interval.
		hiH := math.Min(h+u, 0.999)
		loH := math.Max(h-u, 0)
		model := (f.f0SamplesPerS/(1-hiH) - f.f0SamplesPerS/(1-loH)) / 2
		ci = model + v*f.knotRelCI(fr)
	}
	for _, c := range f.caps { // the lowest observed rate at a limit >= m
		if c.x >= m && c.v < v {
			v, ci = c.v, c.ci
		}
	}
	return v, ci
}

// knotRelCI interpolates the knots' relative intervals at fr.
func (f *Fitted) knotRelCI(fr float64) float64 {
	ks := f.hKnots
	if len(ks) == 0 {
		return 0
	}
	if fr <= ks[0].frac {
		return ks[0].relCI
	}
	for i := 1; i < len(ks); i++ {
		if fr <= ks[i].frac {
			t := (fr - ks[i-1].frac) / (ks[i].frac - ks[i-1].frac)
			return ks[i-1].relCI + (ks[i].relCI-ks[i-1].relCI)*t
		}
	}
	return ks[len(ks)-1].relCI
}

// Predict returns predicted samples/s and its uncertainty (95% half-width)
// at a grid point (memLimitBytes 0 = unlimited): min(G, P(c), F(m)), 0 at or
// below a limit that was OOM-killed. The interval is that of the term that
// binds, or the larger of two terms within each other's intervals.
func (f *Fitted) Predict(cpus float64, memLimitBytes int64) (samplesPerS, ci95 float64) {
	if !Unlimited(memLimitBytes) && f.oomLimitBytes > 0 && memLimitBytes <= f.oomLimitBytes {
		return 0, 0
	}
	pv, pci := f.cpuAt(cpus)
	if pv > f.gSamplesPerS {
		pv = f.gSamplesPerS
	}
	fv, fci := f.fetchAt(memLimitBytes)
	if f.overlap && !math.IsInf(fv, 1) {
		n := f.workersFor(cpus)
		v := mva(n, pv, fv)
		ci := math.Abs(mva(n, pv+pci, fv)-v) + math.Abs(mva(n, pv, fv+fci)-v)
		return math.Min(v, f.gSamplesPerS), ci
	}
	if fv >= pv {
		if fv-fci <= pv+pci {
			return pv, math.Max(pci, math.Min(fci, pv))
		}
		return pv, pci
	}
	if pv-pci <= fv+fci {
		return fv, math.Max(fci, pci)
	}
	return fv, fci
}

// Info records the model and its parameters for a profile's fit block.
func (f *Fitted) Info() FitInfo {
	pr := map[string]float64{
		"g_samples_per_s":          f.gSamplesPerS,
		"cpu_points":               float64(len(f.cpu) - 1),
		"anon_bytes":               f.anonBytes,
		"fetch_bound_cells":        float64(f.fetchObservation),
		"lower_bound_cells":        float64(f.boundObservation),
		"hit_curve_alpha":          f.alpha,
		"hit_curve_knots":          float64(len(f.hKnots)),
		"oom_limit_bytes":          float64(f.oomLimitBytes),
		"capped_limits":            float64(len(f.caps)),
		"overlap_mva":              b2f(f.overlap),
		"dataset_bytes":            f.datasetBytes,
		"bytes_per_sample":         f.bytesPerSample,
		"read_bw_bytes_per_s":      f.bwBytesPerS,
		"f0_samples_per_s":         f.f0SamplesPerS,
		"f0_nominal_samples_per_s": f.f0FromBW,
	}
	for k, v := range pr {
		if v == 0 && k != "cpu_points" && k != "g_samples_per_s" {
			delete(pr, k)
		}
	}
	return FitInfo{Model: ModelMinGPUCPUFetch, Params: pr}
}

// Fill fits p, replaces every unmeasured cell of the grid with a
// prediction (Measured=false), sets p.Fit, and sets p.Validation from the
// PhaseValidate cells (predicted vs measured: MAPE, worst cell) with the
// MinIO baseline's MAPE beside ours. Measured cells keep their measurement.
// On error the predicted cells are removed and p.Fit is left alone.
func Fill(p *Profile) error {
	kept := p.Cells[:0]
	for _, c := range p.Cells {
		if c.Measured {
			kept = append(kept, c)
		}
	}
	p.Cells = kept
	f, err := FitProfile(p)
	if err != nil {
		return err
	}
	for _, c := range p.Axes.CPUs {
		for _, m := range p.Axes.MemLimitBytes {
			if p.Cell(c, m) != nil {
				continue
			}
			v, ci := f.Predict(c, m)
			p.Cells = append(p.Cells, Cell{CPUs: c, MemLimitBytes: m, SamplesPerS: v, SamplesPerSCI95: ci})
		}
	}
	p.SortCells()
	info := f.Info()
	p.Fit = &info
	if v := validateWith(p, f); v != nil {
		p.Validation = v
	}
	return nil
}

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

// MinIOPredict is DS-Analyzer's what-if formula (the baseline), for the
// same cells: with the CPU-bound rate Q(c) read off the measured CPU points
// (linear between them, flat past the ends, as Synergy's profiler measures
// every CPU count), and a MinIO cache that hits exactly the cached fraction
// f = clamp((m − anon) / D, 0, 1) of the dataset every epoch,
//
//	fetch time per epoch = f·D / B_mem + (1 − f)·D / B_disk
//
// with B_mem ≫ B_disk, the samples/s is min(Q(c), B_disk / (bytes_per_sample
// · (1 − f))). B_disk is host.read_limit_bytes_per_s, else
// host.cold_read_mb_per_s. ok is false when p has no successful CPU point,
// or the dataset or bandwidth is unknown at a limited memory.
func MinIOPredict(p *Profile, cpus float64, memLimitBytes int64) (float64, bool) {
	var pts []xy // x = cpus
	var anon float64
	for _, c := range fitCellsOf(p, nil) {
		if c.Stats != nil && float64(c.Stats.MemAnonBytes) > anon {
			anon = float64(c.Stats.MemAnonBytes)
		}
		if c.Failure == nil && Unlimited(c.MemLimitBytes) {
			pts = append(pts, xy{x: c.CPUs, v: c.SamplesPerS})
		}
	}
	if len(pts) == 0 {
		return 0, false
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	q, _ := interpXY(pts, cpus)
	if Unlimited(memLimitBytes) {
		return q, true
	}
	D, files := float64(p.Host.DatasetBytes), p.Host.DatasetFiles
	bw := float64(p.Host.ReadLimitBytesPS)
	if bw <= 0 {
		bw = p.Host.ColdReadMBPerS * 1e6
	}
	if D <= 0 || files <= 0 || bw <= 0 {
		return 0, false
	}
	fr := clamp((float64(memLimitBytes)-anon)/D, 0, 1)
	if fr >= 1 {
		return q, true
	}
	fetch := bw / (D / float64(files) * (1 - fr))
	return math.Min(q, fetch), true
}

// interpXY interpolates points linearly, flat past the ends; the interval
// is the bracket's larger one.
func interpXY(pts []xy, x float64) (v, ci float64) {
	if x <= pts[0].x {
		return pts[0].v, pts[0].ci
	}
	for k := 1; k < len(pts); k++ {
		if x <= pts[k].x {
			a, b := pts[k-1], pts[k]
			t := (x - a.x) / (b.x - a.x)
			return a.v + (b.v-a.v)*t, math.Max(a.ci, b.ci)
		}
	}
	last := pts[len(pts)-1]
	return last.v, last.ci
}

// fitConcaveMonotone replaces the knots' values with the weighted
// least-squares fit that is concave and non-decreasing in cpus, with the
// fixed origin, by Dykstra's alternating projections onto the half-spaces
// "slope k >= slope k+1" and "last slope >= 0" (each projection is exact in
// the weighted norm, so the cycle converges to the projection onto their
// intersection). Weights are 1 / relative CI².
func fitConcaveMonotone(ks []cpuKnot) {
	n := len(ks)
	if n <= 1 {
		return
	}
	v := make([]float64, n)
	winv := make([]float64, n) // inverse weights; 0 = fixed
	for i, k := range ks {
		v[i] = k.v
		if !k.fixed {
			winv[i] = sq(relCI(k.meas, k.ci) * math.Max(k.meas, 1e-9))
		}
	}
	x := func(i int) float64 { return ks[i].cpus }
	// constraints as coefficient triples over (i-1, i, i+1) or pairs.
	type con struct {
		idx  []int
		coef []float64
	}
	var cons []con
	for i := 1; i+1 < n; i++ {
		// (v[i]-v[i-1])/(x_i-x_{i-1}) - (v[i+1]-v[i])/(x_{i+1}-x_i) >= 0
		d1, d2 := x(i)-x(i-1), x(i+1)-x(i)
		cons = append(cons, con{[]int{i - 1, i, i + 1}, []float64{-1 / d1, 1/d1 + 1/d2, -1 / d2}})
	}
	// last slope >= 0
	cons = append(cons, con{[]int{n - 2, n - 1}, []float64{-1, 1}})
	incr := make([][]float64, len(cons))
	for i := range incr {
		incr[i] = make([]float64, n)
	}
	for iter := 0; iter < 5000; iter++ {
		moved := 0.0
		for ci, c := range cons {
			// y = v + incr; project y onto {a·y >= 0}
			y := make([]float64, n)
			for i := range v {
				y[i] = v[i] + incr[ci][i]
			}
			var dot, norm float64
			for j, i := range c.idx {
				dot += c.coef[j] * y[i]
				norm += c.coef[j] * c.coef[j] * winv[i]
			}
			nv := append([]float64(nil), y...)
			if dot < 0 && norm > 0 {
				for j, i := range c.idx {
					nv[i] = y[i] - dot/norm*winv[i]*c.coef[j]
				}
			}
			for i := range v {
				incr[ci][i] = y[i] - nv[i]
				moved = math.Max(moved, math.Abs(nv[i]-v[i]))
				v[i] = nv[i]
			}
		}
		if moved < 1e-9 {
			break
		}
	}
	for i := range ks {
		if !ks[i].fixed {
			ks[i].v = math.Max(v[i], 0)
		}
	}
}

// isotonicH makes the knots' h non-decreasing in frac by weighted
// pool-adjacent-violators.
func isotonicH(ks []hKnot) {
	type block struct {
		h, w float64
		n    int
	}
	var bs []block
	for _, k := range ks {
		bs = append(bs, block{k.h, k.w, 1})
		for len(bs) > 1 && bs[len(bs)-2].h > bs[len(bs)-1].h {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			w := a.w + b.w
			bs = bs[:len(bs)-2]
			bs = append(bs, block{(a.h*a.w + b.h*b.w) / w, w, a.n + b.n})
		}
	}
	i := 0
	for _, b := range bs {
		for j := 0; j < b.n; j++ {
			ks[i].h = b.h
			i++
		}
	}
}

func mergeSameFrac(ks []hKnot) []hKnot {
	var out []hKnot
	for _, k := range ks {
		if n := len(out); n > 0 && out[n-1].frac == k.frac {
			// a lower bound beside an observation: keep the larger h
			if k.h > out[n-1].h {
				out[n-1].h = k.h
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

func relCI(v, ci float64) float64 {
	if !(v > 0) {
		return 1
	}
	return math.Max(ci/v, minRelCI)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func sq(x float64) float64 { return x * x }
