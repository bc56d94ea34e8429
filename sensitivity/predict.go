package sensitivity

import (
	"math"
	"sort"
)

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
// at a grid point (memLimitBytes 0 = unlimited): min(G, P(c), F(m)); 0 at or
// below a limit that was OOM-killed with as many loader workers or fewer,
// and an interval as wide as the value at or below one killed with more
// (the cell may fail too: oomFate). The interval is that of the term that
// binds, or the larger of two terms within each other's intervals.
func (f *Fitted) Predict(cpus float64, memLimitBytes int64) (samplesPerS, ci95 float64) {
	fails, mayFail := f.oomFate(cpus, memLimitBytes)
	if fails {
		return 0, 0
	}
	v, ci := f.predictRate(cpus, memLimitBytes)
	if mayFail {
		ci = math.Max(ci, v)
	}
	return v, ci
}

// predictRate is Predict's rate, OOM-killed limits aside.
func (f *Fitted) predictRate(cpus float64, memLimitBytes int64) (samplesPerS, ci95 float64) {
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
