package sensitivity

import (
	"errors"
	"math"
	"sort"
)

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

// fitCells fits the model to cells, phase by phase: the OOM-killed limit,
// P(c) on the CPU points, the GPU plateau G, the job's own working set,
// then F(m).
func fitCells(p *Profile, cells []Cell) (*Fitted, error) {
	f := &Fitted{dramBytes: float64(p.Host.DRAMBytes), gpus: max(p.Job.GPUs, 1)}
	f.ooms = f.oomPoints(cells)
	if err := f.fitCPUCurve(cells); err != nil {
		return nil, err
	}
	f.gSamplesPerS = math.Max(gpuPlateau(p, cells), f.cpu[len(f.cpu)-1].v)
	f.anonBytes = anonBytes(cells)
	f.fitFetch(p, cells)
	return f, nil
}

// oomAt is an OOM-killed limited point: its limit and the loader workers
// it ran (each worker is a process with its own memory).
type oomAt struct {
	limit   int64
	workers int
}

// oomPoints lists the OOM-killed limited cells.
func (f *Fitted) oomPoints(cells []Cell) []oomAt {
	var out []oomAt
	for _, c := range cells {
		if c.Failure != nil && c.Failure.Class == FailOOMKilled && !Unlimited(c.MemLimitBytes) {
			out = append(out, oomAt{limit: c.MemLimitBytes, workers: f.cellWorkers(c)})
		}
	}
	return out
}

// oomLimit is the largest OOM-killed limit (0 = none), as fit.params
// records it.
func (f *Fitted) oomLimit() int64 {
	var lim int64
	for _, o := range f.ooms {
		lim = max(lim, o.limit)
	}
	return lim
}

// oomFate says what the OOM-killed points imply for a cell: fails, at or
// below a limit that was OOM-killed with as many loader workers or fewer
// (the cell's job is at least as big under at most as much memory); may
// fail, at or below such a limit with fewer workers than it ran (a worker
// less may fit: the PyTorch image job at 288 MiB was OOM-killed with two
// workers and ran with one, docs/cost.md).
func (f *Fitted) oomFate(cpus float64, memLimitBytes int64) (fails, mayFail bool) {
	if Unlimited(memLimitBytes) {
		return false, false
	}
	n := f.workersFor(cpus)
	for _, o := range f.ooms {
		if memLimitBytes <= o.limit {
			if n >= o.workers {
				return true, false
			}
			mayFail = true
		}
	}
	return false, mayFail
}

// fitCPUCurve fits P(c) on the CPU points (unlimited memory, or a limited
// cell that used all its cores), merged per CPU count by 1 / relative CI².
func (f *Fitted) fitCPUCurve(cells []Cell) error {
	type obs struct{ x, v, ci float64 }
	byCPU := map[float64][]obs{}
	for _, c := range cells {
		if c.Failure == nil && (Unlimited(c.MemLimitBytes) || f.cpuSaturated(c)) {
			byCPU[c.CPUs] = append(byCPU[c.CPUs], obs{c.CPUs, c.SamplesPerS, c.SamplesPerSCI95})
		}
	}
	if len(byCPU) == 0 {
		return errors.New("fit: no successful measured cell at unlimited memory (a CPU point) to fit P(c) from")
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
	return nil
}

// gpuPlateau is G before the CPU curve bounds it: the step-only run's rate
// when there is one, else the rate with no data wait, v / (1 −
// data_wait_fraction), the median over the cells whose metrics stream
// reports the wait (0 when none does).
func gpuPlateau(p *Profile, cells []Cell) float64 {
	if so := p.StepOnly; so != nil && so.Failure == nil && so.SamplesPerS > 0 {
		return so.SamplesPerS // measured directly: the step with synthetic data
	}
	var gs []float64
	for _, c := range cells {
		if c.Failure == nil && c.Stats != nil && c.Stats.MetricsSource == MetricsStream && c.SamplesPerS > 0 &&
			c.Stats.DataWaitFraction >= 0 && c.Stats.DataWaitFraction < 0.98 {
			gs = append(gs, c.SamplesPerS/(1-c.Stats.DataWaitFraction))
		}
	}
	return median(gs)
}

// anonBytes is the job's own working set: the largest anonymous memory
// any cell saw.
func anonBytes(cells []Cell) float64 {
	var anon float64
	for _, c := range cells {
		if c.Stats != nil && float64(c.Stats.MemAnonBytes) > anon {
			anon = float64(c.Stats.MemAnonBytes)
		}
	}
	return anon
}

// fitFetch calibrates F(m) on the limited-memory cells, phase by phase:
// observe the limited cells, choose how the CPU and fetch terms combine,
// record the rates observed per limit; then, with the dataset known,
// calibrate F0, the hit curve's knots and shape, and raise the curve to
// the lower bounds the non-binding cells set.
func (f *Fitted) fitFetch(p *Profile, cells []Cell) {
	f.alpha = 1
	lims := f.limitedObservations(cells)
	f.overlap = chooseOverlap(lims)
	f.fetchBoundRates(lims)
	f.caps = fetchCaps(lims)
	if p.Host.DatasetBytes <= 0 || p.Host.DatasetFiles <= 0 {
		f.fitMemDirect(lims)
		return
	}
	f.fetch = true
	f.setDataset(p.Host)
	if !f.calibrateF0(lims) {
		f.fetch = false // neither a bandwidth nor a fetch-bound cell: F does not bind
		return
	}
	f.hKnots = f.observedHitKnots(lims)
	if a, ok := fitAlpha(f.hKnots); ok {
		f.alpha = a
	}
	f.addLowerBounds(lims)
	// Knots at the same fraction (a bound beside an observation) merge.
	f.hKnots = mergeSameFrac(f.hKnots)
	isotonicH(f.hKnots)
}

// limitedObservations returns the successful limited-memory cells above
// any OOM-killed limit, each with the CPU curve at its CPUs and whether
// the fetch bound it.
func (f *Fitted) limitedObservations(cells []Cell) []limObs {
	var lims []limObs
	for _, c := range cells {
		if c.Failure != nil || Unlimited(c.MemLimitBytes) {
			continue
		}
		if fails, _ := f.oomFate(c.CPUs, c.MemLimitBytes); fails {
			continue
		}
		pc, pcCI := f.cpuAt(c.CPUs)
		pc = math.Min(pc, f.gSamplesPerS)
		tol := math.Max(bindingTol, relCI(c.SamplesPerS, c.SamplesPerSCI95)+relCI(pc, pcCI))
		n := f.cellWorkers(c)
		lims = append(lims, limObs{mem: c.MemLimitBytes, x: c.SamplesPerS, xci: c.SamplesPerSCI95, pc: pc, pcCI: pcCI, n: n, tol: tol,
			fetchBind: c.SamplesPerS < pc*(1-tol) && !f.cpuSaturated(c)})
	}
	return lims
}

// fetchBoundRates sets each observation's fetch-bound rate (v ± ci) under
// the chosen combination: the measured rate under min, the rate MVA
// inverts to under overlap.
func (f *Fitted) fetchBoundRates(lims []limObs) {
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
}

// fetchCaps returns the fetch-bound rates observed per limit (weighted by
// 1 / relative CI²), ascending in the limit.
func fetchCaps(lims []limObs) []xy {
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
	var caps []xy
	for m, a := range capAcc {
		a.v /= capW[m]
		a.ci /= capW[m]
		caps = append(caps, *a)
	}
	sort.Slice(caps, func(i, j int) bool { return caps[i].x < caps[j].x })
	return caps
}

// fitMemDirect keeps, with no dataset known, only what was observed: the
// fetch-bound rates per limit.
func (f *Fitted) fitMemDirect(lims []limObs) {
	for _, o := range lims {
		if o.fetchBind && o.v > 0 {
			f.memDirect = append(f.memDirect, xy{float64(o.mem), o.v, o.ci})
			f.fetchObservation++
		}
	}
	sort.Slice(f.memDirect, func(i, j int) bool { return f.memDirect[i].x < f.memDirect[j].x })
}

// setDataset records the dataset's size, bytes per sample and the read
// bandwidth (the throttle, else the measured cold read), and F0 = BW /
// bytes_per_sample when the bandwidth is known.
func (f *Fitted) setDataset(h HostInfo) {
	f.datasetBytes = float64(h.DatasetBytes)
	f.bytesPerSample = f.datasetBytes / float64(h.DatasetFiles)
	switch {
	case h.ReadLimitBytesPS > 0:
		f.bwBytesPerS = float64(h.ReadLimitBytesPS)
	case h.ColdReadMBPerS > 0:
		f.bwBytesPerS = h.ColdReadMBPerS * 1e6
	}
	if f.bwBytesPerS > 0 {
		f.f0FromBW = f.bwBytesPerS / f.bytesPerSample
	}
	f.f0SamplesPerS = f.f0FromBW
}

// calibrateF0 lowers F0 to the slowest fetch-bound rate where one is
// slower than BW / bytes_per_sample: the effective bandwidth is lower then
// (per-file overheads, a shared device). It reports whether F0 is known.
func (f *Fitted) calibrateF0(lims []limObs) bool {
	for _, o := range lims {
		if fr := f.frac(float64(o.mem)); fr >= 1 {
			continue // the whole dataset fits: a shortfall here is not the fetch
		}
		if o.fetchBind && o.v > 0 && (f.f0SamplesPerS == 0 || o.v < f.f0SamplesPerS) {
			f.f0SamplesPerS = o.v
		}
	}
	return f.f0SamplesPerS != 0
}

// observedHitKnots returns the hit fractions the fetch-bound cells imply,
// h = 1 − F0 / F, merged per budget fraction in (0, 1), ascending and made
// non-decreasing.
func (f *Fitted) observedHitKnots(lims []limObs) []hKnot {
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
	return knots
}

// fitAlpha is the weighted least-squares slope of ln h = alpha ln frac
// over the knots, clamped to [0.25, 8]; ok is false when no knot has h > 0.
func fitAlpha(knots []hKnot) (alpha float64, ok bool) {
	var num, den float64
	for _, k := range knots {
		if k.h > 0 {
			lf := math.Log(k.frac)
			num += k.w * math.Log(k.h) * lf
			den += k.w * lf * lf
		}
	}
	if den > 0 {
		return clamp(num/den, 0.25, 8), true
	}
	return 0, false
}

// addLowerBounds raises the hit curve where a limited cell ran at the CPU
// curve: F(m) was at least that fast there, so h(m) >= 1 − F0/P(c).
func (f *Fitted) addLowerBounds(lims []limObs) {
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
	return cores >= saturatedFrac*math.Min(c.CPUs, float64(f.cellWorkers(c)))
}

// workersFor is the profiler's rule: ceil(cpus / gpus), at least 1.
func (f *Fitted) workersFor(cpus float64) int {
	return max(1, int(math.Ceil(cpus/float64(f.gpus)-1e-9)))
}

// cellWorkers is the loader workers a measured cell ran: its recorded
// count, else the profiler's rule.
func (f *Fitted) cellWorkers(c Cell) int {
	if c.Stats != nil && c.Stats.Workers > 0 {
		return c.Stats.Workers
	}
	return f.workersFor(c.CPUs)
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
