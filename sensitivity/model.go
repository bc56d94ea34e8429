package sensitivity

// ModelMinGPUCPUFetch names the model FitProfile fits (docs/model.md):
// throughput(c, m) = min(G, P(c), F(m)).
const ModelMinGPUCPUFetch = "min-gpu-cpu-fetch/v1"

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
	ooms             []oomAt // every OOM-killed limit, with the loader workers it ran
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
		"oom_limit_bytes":          float64(f.oomLimit()),
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
