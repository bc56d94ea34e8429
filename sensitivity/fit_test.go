package sensitivity

import (
	"math"
	"testing"
	"time"
)

const mib = 1 << 20

// truth is a job whose throughput is known in closed form: a CPU curve
// min(G, perCore·c), and a fetch-bound rate F0 / (1 − budget_frac^alpha)
// over a dataset of D bytes in files samples read at bw bytes/s.
type truth struct {
	g, perCore   float64
	d            int64
	files        int
	bw           float64
	alpha        float64
	anon         int64
	oomAtOrBelow int64
	// serial: the loader's workers (ceil(cpus), one GPU) each fetch then
	// preprocess, so P and F combine as mva(workers, P, F), not min.
	serial bool
}

func (tr truth) f0() float64 { return tr.bw / (float64(tr.d) / float64(tr.files)) }

func (tr truth) at(c float64, m int64) float64 {
	if m > 0 && m <= tr.oomAtOrBelow {
		return 0
	}
	v := math.Min(tr.g, tr.perCore*c)
	if m > 0 {
		fr := clamp(float64(m-tr.anon)/float64(tr.d), 0, 1)
		if fr < 1 {
			f := tr.f0() / (1 - math.Pow(fr, tr.alpha))
			if tr.serial {
				v = math.Min(tr.g, mva(int(math.Ceil(c)), tr.perCore*c, f))
			} else {
				v = math.Min(v, f)
			}
		}
	}
	return v
}

// profileOf measures tr at the given cells (phase by position: unlimited
// is a CPU point, limited a memory point) with a 1% interval.
func profileOf(tr truth, cpus []float64, mems []int64, measured [][2]float64) *Profile {
	p := &Profile{
		SchemaVersion: SchemaVersion,
		CreatedAt:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Job:           JobInfo{Name: "t", Batch: 16, GPUs: 1},
		Host:          HostInfo{DRAMBytes: 8 << 30, DatasetBytes: tr.d, DatasetFiles: tr.files, ReadLimitBytesPS: int64(tr.bw)},
		GPU:           GPUInfo{Mode: GPUModeEmulated},
		Axes:          Axes{CPUs: cpus, MemLimitBytes: mems},
	}
	for _, cm := range measured {
		c, m := cm[0], int64(cm[1])
		v := tr.at(c, m)
		cell := Cell{CPUs: c, MemLimitBytes: m, Measured: true, Phase: PhaseCPU, SamplesPerS: v, SamplesPerSCI95: v * 0.01,
			Stats: &PointStats{Workers: max(1, int(math.Ceil(c))), Iterations: 100, StopReason: "converged", MemAnonBytes: tr.anon, MetricsSource: MetricsStream, DataWaitFraction: 1 - v/tr.g}}
		if m > 0 {
			cell.Phase = PhaseMemory
		}
		if v == 0 {
			cell.SamplesPerSCI95 = 0
			cell.Failure = &Failure{Class: FailOOMKilled, ExitCode: -1}
			cell.Stats = nil
		}
		p.Cells = append(p.Cells, cell)
	}
	p.SortCells()
	return p
}

// audioLike: fetch-bound when not cached (40 MB/s over 1.5 MB samples,
// F0 = 26 samples/s), GPU-bound at 400 samples/s, LRU-like hit curve frac².
var audioLike = truth{g: 400, perCore: 600, d: 256 * mib, files: 175, bw: 40e6, alpha: 2, anon: 16 * mib}

func TestFit_RecoversHitCurveAtUnmeasuredLimit(t *testing.T) {
	tr := audioLike
	mems := []int64{64 * mib, 128 * mib, 160 * mib, 208 * mib, 0}
	// measured: CPU axis at unlimited; memory at 1 CPU at 64, 128, 208 MiB
	// (160 MiB is left to the model)
	p := profileOf(tr, []float64{0.25, 0.5, 1}, mems, [][2]float64{
		{0.25, 0}, {0.5, 0}, {1, 0}, {1, 64 * mib}, {1, 128 * mib}, {1, 208 * mib},
	})
	f, err := FitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	// budget at 160 MiB = (160-16)/256 = 0.5625; truth h = 0.316,
	// F = 26.0/0.684 = 38.1 samples/s; MinIO says h = 0.5625, F = 59.5.
	want := tr.at(1, 160*mib)
	got, ci := f.Predict(1, 160*mib)
	if math.Abs(got-want)/want > 0.02 {
		t.Errorf("F(160MiB) = %.2f, want %.2f within 2%% (alpha fitted %.3f)", got, want, f.alpha)
	}
	if ci <= 0 {
		t.Errorf("a predicted cell between calibrated limits has interval %v, want > 0", ci)
	}
	if math.Abs(f.alpha-2) > 0.05 {
		t.Errorf("alpha = %.3f, want 2 ± 0.05 (the truth's exponent)", f.alpha)
	}
	base, ok := MinIOPredict(p, 1, 160*mib)
	if !ok || math.Abs(base-want)/want < 0.3 {
		t.Errorf("MinIO baseline = %.1f (ok %v): expected it at least 30%% off the LRU-like truth %.1f", base, ok, want)
	}
	// Cross cells: min with the CPU curve at a measured limit is exact
	// (0.25 CPUs: 150 samples/s CPU-bound vs 208 MiB: 0.75² hit, F = 59.4).
	for _, cm := range [][2]float64{{0.25, 64 * mib}, {0.5, 128 * mib}, {0.25, 208 * mib}, {0.5, 0}} {
		c, m := cm[0], int64(cm[1])
		got, _ := f.Predict(c, m)
		want := tr.at(c, m)
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("Predict(%v, %dMiB) = %.2f, want %.2f within 2%%", c, m/mib, got, want)
		}
	}
}

func TestFit_PredictTable(t *testing.T) {
	// image-like: CPU-bound 200/core up to G = 350, memory insensitive
	// (reads at 1.4 GB/s over 90 KiB files: F0 = 15500 samples/s).
	img := truth{g: 350, perCore: 200, d: 64 * mib, files: 730, bw: 1.4e9, alpha: 2, anon: 100 * mib, oomAtOrBelow: 96 * mib}
	p := profileOf(img, []float64{0.5, 1, 1.5, 2}, []int64{96 * mib, 128 * mib, 256 * mib, 0}, [][2]float64{
		{0.5, 0}, {1, 0}, {2, 0}, {2, 96 * mib}, {2, 256 * mib},
	})
	f, err := FitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		cpus          float64
		mem           int64
		want, tolFrac float64
	}{
		{"measured CPU knot", 1, 0, 200, 0.001},
		{"OOM limit predicts 0 at as many loader workers", 1.5, 96 * mib, 0, 0},
		{"OOM limit predicts 0 below it", 2, 64 * mib, 0, 0},
		// between 1 and 2 cores the concave band is [chord 275, min(350, 200+200·0.5)=300]: middle 287.5
		{"between knots: middle of the concave band", 1.5, 0, 287.5, 0.001},
		{"unmeasured limit above the OOM, memory insensitive", 1, 128 * mib, 200, 0.01},
		{"measured limit at another CPU count", 0.5, 256 * mib, 100, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := f.Predict(tt.cpus, tt.mem)
			if math.Abs(got-tt.want) > tt.tolFrac*tt.want+1e-9 {
				t.Errorf("Predict(%v, %dMiB) = %v, want %v ± %v%%", tt.cpus, tt.mem/mib, got, tt.want, tt.tolFrac*100)
			}
		})
	}
}

// An OOM kill with two loader workers says little of one worker under the
// same limit (the PyTorch job at 288 MiB: killed with two, ran with one):
// such a cell is predicted by the model with an interval as wide as its
// value, so a strategy measures it before trusting it, and a cell with as
// many workers stays failed.
func TestFit_OOMWithMoreWorkersLeavesFewerWorkersUncertain(t *testing.T) {
	img := truth{g: 350, perCore: 200, d: 64 * mib, files: 730, bw: 1.4e9, alpha: 2, anon: 100 * mib, oomAtOrBelow: 96 * mib}
	p := profileOf(img, []float64{0.5, 1, 1.5, 2}, []int64{96 * mib, 256 * mib, 0}, [][2]float64{
		{0.5, 0}, {1, 0}, {2, 0}, {2, 96 * mib}, {2, 256 * mib},
	})
	f, err := FitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []float64{0.5, 1} {
		v, ci := f.Predict(c, 96*mib)
		if want := 200 * c; math.Abs(v-want) > 0.01*want || ci < v {
			t.Errorf("Predict(%v, 96MiB) = %v ± %v; want the model's %v with an interval at least as wide", c, v, ci, want)
		}
	}
	if v, ci := f.Predict(1, 256*mib); ci >= v/2 {
		t.Errorf("Predict(1, 256MiB) = %v ± %v: a limit above every OOM kill should not be marked uncertain", v, ci)
	}
	// Measured: one worker runs at 96 MiB too. The refit keeps both.
	p.Cells = append(p.Cells, Cell{CPUs: 1, MemLimitBytes: 96 * mib, Measured: true, Phase: PhaseMemory, SamplesPerS: 200, SamplesPerSCI95: 2,
		Stats: &PointStats{Workers: 1, Iterations: 100, StopReason: "converged", MemAnonBytes: img.anon, MetricsSource: MetricsStream, DataWaitFraction: 0.4}})
	p.SortCells()
	if f, err = FitProfile(p); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Predict(1.5, 96*mib); v != 0 {
		t.Errorf("Predict(1.5, 96MiB) = %v: two workers were OOM-killed there, want 0", v)
	}
}

func TestFitConcaveMonotone_NoWiggles(t *testing.T) {
	tests := []struct {
		name string
		x, v []float64
	}{
		{"superlinear noise", []float64{1, 2}, []float64{202, 428}},
		{"dip", []float64{1, 2, 3}, []float64{100, 90, 150}},
		{"convex bend", []float64{0.5, 1, 1.5, 2}, []float64{50, 60, 150, 160}},
		{"already concave", []float64{0.5, 1, 2}, []float64{100, 180, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := []cpuKnot{{fixed: true}}
			for i := range tt.x {
				ks = append(ks, cpuKnot{cpus: tt.x[i], v: tt.v[i], meas: tt.v[i], ci: tt.v[i] * 0.02})
			}
			fitConcaveMonotone(ks)
			if ks[0].v != 0 {
				t.Fatalf("origin moved to %v", ks[0].v)
			}
			var sumSq float64
			for i := 1; i < len(ks); i++ {
				s := (ks[i].v - ks[i-1].v) / (ks[i].cpus - ks[i-1].cpus)
				if s < -1e-6 {
					t.Errorf("slope %d = %v < 0 (not monotone): %+v", i, s, ks)
				}
				if i+1 < len(ks) {
					s2 := (ks[i+1].v - ks[i].v) / (ks[i+1].cpus - ks[i].cpus)
					if s2 > s+1e-6 {
						t.Errorf("slope rises %v -> %v at knot %d (not concave): %+v", s, s2, i, ks)
					}
				}
				sumSq += sq(ks[i].v - ks[i].meas)
			}
			if tt.name == "already concave" && sumSq > 1e-9 {
				t.Errorf("a concave monotone input moved by %v: %+v", sumSq, ks)
			}
			if tt.name == "superlinear noise" {
				// equal relative weights: the fit is the projection onto
				// v2 <= 2·v1; it keeps the ratio at exactly 2
				if math.Abs(ks[2].v-2*ks[1].v) > 1e-3 {
					t.Errorf("fit %v, %v: want v(2) = 2·v(1) at the boundary", ks[1].v, ks[2].v)
				}
			}
		})
	}
}

func TestFill_KeepsMeasuredPredictsRestAndValidates(t *testing.T) {
	tr := audioLike
	mems := []int64{64 * mib, 128 * mib, 208 * mib, 0}
	p := profileOf(tr, []float64{0.25, 1}, mems, [][2]float64{
		{0.25, 0}, {1, 0}, {1, 64 * mib}, {1, 208 * mib},
	})
	// a validate cell the fit must not see, measured 10% above the truth
	// so its error is known: |v − 1.1v| / 1.1v = 9.09%
	vt := tr.at(0.25, 128*mib)
	p.SetCell(Cell{CPUs: 0.25, MemLimitBytes: 128 * mib, Measured: true, Phase: PhaseValidate, SamplesPerS: vt * 1.1, SamplesPerSCI95: 1})
	if err := Fill(p); err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != len(p.Axes.CPUs)*len(p.Axes.MemLimitBytes) {
		t.Fatalf("%d cells for a %d×%d grid", len(p.Cells), len(p.Axes.CPUs), len(p.Axes.MemLimitBytes))
	}
	if c := p.Cell(1, 64*mib); !c.Measured || c.SamplesPerS != tr.at(1, 64*mib) {
		t.Errorf("measured cell changed: %+v", c)
	}
	if c := p.Cell(0.25, 64*mib); c.Measured || c.SamplesPerSCI95 <= 0 {
		t.Errorf("predicted cell = %+v, want measured=false with an interval", c)
	}
	if p.Fit == nil || p.Fit.Model != ModelMinGPUCPUFetch || p.Fit.Params["cpu_points"] != 2 {
		t.Errorf("fit = %+v", p.Fit)
	}
	v := p.Validation
	if v == nil || v.Cells != 1 {
		t.Fatalf("validation = %+v, want one cell", v)
	}
	// 128 MiB is not a calibrated limit; the fit is within a few % of
	// the truth, so its error against 1.1·truth is 9.09% ± 3
	if math.Abs(v.MAPEPct-9.09) > 3 || v.WorstCPUs != 0.25 || v.WorstMemBytes != 128*mib || v.WorstErrPct != v.MAPEPct {
		t.Errorf("validation = %+v, want MAPE ≈ 9.09%% at (0.25, 128MiB)", v)
	}
	if v.BaselineName != BaselineMinIO || v.BaselineMAPEPct <= v.MAPEPct {
		t.Errorf("baseline = %q %.1f%%, want the MinIO formula, worse than the fit on an LRU-like job", v.BaselineName, v.BaselineMAPEPct)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("filled profile invalid: %v", err)
	}
	// Refilling is stable.
	before := append([]Cell(nil), p.Cells...)
	if err := Fill(p); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if before[i].SamplesPerS != p.Cells[i].SamplesPerS || before[i].Measured != p.Cells[i].Measured {
			t.Fatalf("refill changed cell %d: %+v -> %+v", i, before[i], p.Cells[i])
		}
	}
}

func TestFill_Errors(t *testing.T) {
	p := profileOf(audioLike, []float64{1}, []int64{64 * mib, 0}, [][2]float64{{1, 64 * mib}})
	p.Cells = append(p.Cells, Cell{CPUs: 1, MemLimitBytes: 0, SamplesPerS: 5}) // stale prediction
	if err := Fill(p); err == nil {
		t.Fatal("a profile without a CPU point fitted")
	}
	if len(p.Cells) != 1 || !p.Cells[0].Measured {
		t.Errorf("stale predicted cells left behind: %+v", p.Cells)
	}
}

func TestFit_NoDatasetFallsBackToMeasuredLimits(t *testing.T) {
	p := profileOf(audioLike, []float64{1}, []int64{64 * mib, 128 * mib, 0}, [][2]float64{{1, 0}, {1, 64 * mib}, {1, 128 * mib}})
	p.Host.DatasetBytes, p.Host.DatasetFiles = 0, 0
	f, err := FitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	// between the two fetch-bound limits: linear, (27.7 + 34.7) / 2 at 96 MiB
	a, b := audioLike.at(1, 64*mib), audioLike.at(1, 128*mib)
	if got, _ := f.Predict(1, 96*mib); math.Abs(got-(a+b)/2) > 1e-9 {
		t.Errorf("Predict(1, 96MiB) = %v, want %v", got, (a+b)/2)
	}
	if got, _ := f.Predict(1, 0); got != 400 {
		t.Errorf("unlimited = %v, want the CPU point 400", got)
	}
}

func TestMinIOPredict_Formula(t *testing.T) {
	p := profileOf(audioLike, []float64{0.25, 1}, []int64{64 * mib, 0}, [][2]float64{{0.25, 0}, {1, 0}})
	tests := []struct {
		cpus float64
		mem  int64
		want float64
		ok   bool
	}{
		// Q(1) = 400, unlimited: no fetch term
		{1, 0, 400, true},
		// Q(0.625) linear between 150 and 400: 275
		{0.625, 0, 275, true},
		// f = (64-16)/256 = 0.1875; 40e6 / (1533916 · 0.8125) = 32.09
		{1, 64 * mib, 40e6 / (float64(256*mib) / 175 * 0.8125), true},
		// budget above the dataset: Q
		{0.25, 512 * mib, 150, true},
	}
	for _, tt := range tests {
		got, ok := MinIOPredict(p, tt.cpus, tt.mem)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("MinIOPredict(%v, %dMiB) = %v, %v; want %v, %v", tt.cpus, tt.mem/mib, got, ok, tt.want, tt.ok)
		}
	}
	p.Host.DatasetBytes = 0
	if _, ok := MinIOPredict(p, 1, 64*mib); ok {
		t.Error("MinIOPredict without a dataset size claimed a value at a limited memory")
	}
}

func TestHoldout_LeaveOneOut(t *testing.T) {
	tr := audioLike
	mems := []int64{64 * mib, 128 * mib, 208 * mib, 0}
	var meas [][2]float64
	for _, c := range []float64{0.25, 0.5, 1} {
		for _, m := range mems {
			meas = append(meas, [2]float64{c, float64(m)})
		}
	}
	p := profileOf(tr, []float64{0.25, 0.5, 1}, mems, meas) // a full grid
	v, skipped, err := Holdout(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.Cells != 12 || skipped != 0 {
		t.Errorf("cells = %d skipped = %d, want 12 and 0", v.Cells, skipped)
	}
	// Limited cells are recovered exactly from the rest of an exact grid
	// (their limit is still measured at another CPU count). A CPU point
	// left out is predicted as the middle of the concave band between its
	// neighbours:
	//   0.25: band [chord 150, 300 − 200·0.25 = 250] → 200 vs 150: 33.3%
	//   0.5:  band [chord 233.3, 300] → 266.7 vs 300: 11.1%
	//   1:    band [300, min(G 400, 300 + 600·0.5)] → 350 vs 400: 12.5%
	// MAPE = (33.3 + 11.1 + 12.5) / 12 = 4.74%
	if v.WorstMemBytes != 0 || v.WorstCPUs != 0.25 || math.Abs(v.WorstErrPct-33.33) > 0.1 {
		t.Errorf("worst cell = (%v, %d) %.2f%%, want the first CPU point at 33.33%%", v.WorstCPUs, v.WorstMemBytes, v.WorstErrPct)
	}
	if math.Abs(v.MAPEPct-4.74) > 0.05 {
		t.Errorf("leave-one-out MAPE = %.2f%%, want 4.74%%", v.MAPEPct)
	}
	if v.BaselineMAPEPct <= v.MAPEPct {
		t.Errorf("MinIO baseline %.2f%% not worse than the fit %.2f%% on an LRU-like job", v.BaselineMAPEPct, v.MAPEPct)
	}
	if _, _, err := Holdout(p, 12); err == nil {
		t.Error("holding out every cell did not fail")
	}
	if _, _, err := Holdout(p, 0); err == nil {
		t.Error("k = 0 did not fail")
	}
}

func TestCombinations(t *testing.T) {
	if got := combinations(4, 2, 100); len(got) != 6 { // C(4,2) = 6
		t.Errorf("C(4,2) gave %d subsets", len(got))
	}
	if got := combinations(30, 5, 100); len(got) != 30 { // C(30,5) = 142506 > 100: 30 windows
		t.Errorf("capped combinations gave %d subsets, want 30 windows", len(got))
	}
}

func TestFit_GPlateauCapsExtrapolation(t *testing.T) {
	img := truth{g: 350, perCore: 200, d: 64 * mib, files: 730, bw: 1.4e9, alpha: 1}
	p := profileOf(img, []float64{0.5, 1, 2}, []int64{0}, [][2]float64{{0.5, 0}, {1, 0}})
	tests := []struct {
		name     string
		stepOnly *StepOnly
		want     float64
	}{
		// G from v / (1 − wait) = 350: band past 1 core [200, min(350, 200 + 200·1)] → 275
		{"G from the data wait", nil, 275},
		// the step-only run says 250: band [200, 250] → 225
		{"G from the step-only run", &StepOnly{CPUs: 1, SamplesPerS: 250}, 225},
		// a failed step-only run is ignored
		{"failed step-only run", &StepOnly{CPUs: 1, Failure: &Failure{Class: FailCrashed}}, 275},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.StepOnly = tt.stepOnly
			f, err := FitProfile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := f.Predict(2, 0); math.Abs(got-tt.want) > 1e-6 {
				t.Errorf("Predict(2, unlimited) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFit_ShortfallTheHitCurveCannotExplainStillBinds(t *testing.T) {
	// A 40-byte dataset: every limit holds it all (f >= 1), yet the job ran
	// at 120 under 50 MiB (its own memory pressure, say). F is monotone in
	// m, so 120 caps every limit up to 50 MiB at every CPU count, and
	// nothing above it.
	p := profileOf(truth{g: 1000, perCore: 100, d: 40, files: 40, bw: 1e9, alpha: 1}, []float64{1, 2, 3}, []int64{25 * mib, 50 * mib, 200 * mib, 0},
		[][2]float64{{1, 0}, {2, 0}, {3, 0}, {2, 200 * mib}})
	p.SetCell(Cell{CPUs: 2, MemLimitBytes: 50 * mib, Measured: true, Phase: PhaseMemory, SamplesPerS: 120, SamplesPerSCI95: 1})
	f, err := FitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cpus float64
		mem  int64
		want float64
	}{{3, 25 * mib, 120}, {3, 50 * mib, 120}, {1, 50 * mib, 100}, {3, 200 * mib, 300}} {
		if got, _ := f.Predict(tt.cpus, tt.mem); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("Predict(%v, %dMiB) = %v, want %v", tt.cpus, tt.mem/mib, got, tt.want)
		}
	}
}

func TestMVA(t *testing.T) {
	tests := []struct {
		n       int
		p, f    float64
		want    float64
		comment string
	}{
		{1, 100, 100, 50, "one worker: 1/(1/100 + 1/100)"},
		{1, 300, 60, 50, "1/(1/300 + 1/60) = 50"},
		// n = 2, equal rates d = 0.01: X1 = 50, Q = 0.5 each; R = 0.015
		// each, X2 = 2 / 0.03 = 66.67
		{2, 100, 100, 66.6667, "two workers"},
		{1000, 100, 60, 60, "many workers: min"},
		{3, 100, math.Inf(1), 100, "no fetch: P"},
	}
	for _, tt := range tests {
		got := mva(tt.n, tt.p, tt.f)
		if math.Abs(got-tt.want) > 0.01*tt.want {
			t.Errorf("%s: mva(%d, %v, %v) = %v, want %v", tt.comment, tt.n, tt.p, tt.f, got, tt.want)
		}
		if !math.IsInf(tt.f, 1) {
			if back := invMVA(tt.n, tt.p, got); math.Abs(back-tt.f) > 1e-6*tt.f {
				t.Errorf("%s: invMVA = %v, want %v", tt.comment, back, tt.f)
			}
		}
	}
}

func TestFit_OverlapChosenByCrossCells(t *testing.T) {
	cpus := []float64{0.25, 0.5, 1, 2}
	mems := []int64{64 * mib, 128 * mib, 208 * mib, 0}
	meas := [][2]float64{{0.25, 0}, {0.5, 0}, {1, 0}, {2, 0}, {1, 64 * mib}, {1, 128 * mib}, {1, 208 * mib},
		{0.25, 128 * mib}} // one cross cell
	for _, serial := range []bool{false, true} {
		// CPU-light job: 400 samples/s per core, so at 0.25 CPUs P = 100
		// and the fetch (26–60 samples/s) is a large share of each cycle.
		tr := truth{g: 700, perCore: 400, d: 256 * mib, files: 175, bw: 40e6, alpha: 2, anon: 16 * mib, serial: serial}
		p := profileOf(tr, cpus, mems, meas)
		f, err := FitProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		if f.overlap != serial {
			t.Errorf("serial=%v: overlap chosen %v", serial, f.overlap)
		}
		for _, c := range cpus {
			for _, m := range mems {
				want := tr.at(c, m)
				if got, _ := f.Predict(c, m); math.Abs(got-want)/want > 0.02 {
					t.Errorf("serial=%v: Predict(%v, %dMiB) = %.2f, want %.2f within 2%%", serial, c, m/mib, got, want)
				}
			}
		}
	}
}

// BenchmarkFill: one fit and 30 predictions of a 6 × 5 grid from 10
// measured cells with a cross cell (the overlap test runs), as the
// profiler does after every point.
func BenchmarkFill(b *testing.B) {
	tr := truth{g: 700, perCore: 400, d: 256 * mib, files: 175, bw: 40e6, alpha: 2, anon: 16 * mib, serial: true}
	cpus := []float64{0.25, 0.5, 0.75, 1, 1.5, 2}
	mems := []int64{64 * mib, 128 * mib, 192 * mib, 320 * mib, 0}
	base := profileOf(tr, cpus, mems, [][2]float64{{0.25, 0}, {0.75, 0}, {1, 0}, {2, 0},
		{1, 64 * mib}, {1, 128 * mib}, {1, 192 * mib}, {1, 320 * mib}, {0.25, 128 * mib}, {0.5, 192 * mib}})
	for b.Loop() {
		p := *base
		p.Cells = append([]Cell(nil), base.Cells...)
		if err := Fill(&p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFit_CPUSaturatedCellIsACPUPointNotAFetchBound(t *testing.T) {
	// image-like: reads are fast (F0 = 1.4e9 / 91 KiB ≈ 15000/s). A limited
	// cell 10% below the unlimited one at 2 CPUs that used all its cores is
	// CPU noise, not a fetch bound: it must not drag F0 down to 400 (which
	// would predict ≈ 400 at every limit ≤ 256 MiB), and it joins P(2).
	img := truth{g: 3000, perCore: 220, d: 96 * mib, files: 1100, bw: 1.4e9, alpha: 1}
	p := profileOf(img, []float64{1, 2}, []int64{224 * mib, 256 * mib, 0}, [][2]float64{{1, 0}, {2, 0}})
	sat := func(c float64, v float64, cores float64) Cell {
		return Cell{CPUs: c, MemLimitBytes: 256 * mib, Measured: true, Phase: PhaseMemory, SamplesPerS: v, SamplesPerSCI95: v * 0.01,
			Stats: &PointStats{Workers: int(math.Ceil(c)), CPUCoresMean: cores, MetricsSource: MetricsStream, DataWaitFraction: 0.9}}
	}
	tests := []struct {
		name      string
		cell      Cell
		wantFetch bool
		want224   float64 // Predict(2, 224MiB)
	}{
		// 1.95 of 2 cores used: CPU-bound. P(2) becomes the mean of 440 and
		// 396 (equal relative weights) = 418, at every limit.
		{"saturated", sat(2, 396, 1.95), false, 418},
		// 0.3 of 2 cores: a real fetch bound at 256 MiB, which caps F at
		// every limit up to it: (2, 224MiB) = min(P(2) = 440, 396) = 396.
		{"not saturated", sat(2, 396, 0.3), true, 396},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := *p
			q.Cells = append([]Cell(nil), p.Cells...)
			q.SetCell(tt.cell)
			f, err := FitProfile(&q)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.fetchObservation > 0; got != tt.wantFetch {
				t.Errorf("fetch-bound observations %d, want any = %v", f.fetchObservation, tt.wantFetch)
			}
			if !tt.wantFetch {
				if got, _ := f.Predict(2, 0); math.Abs(got-418) > 1 {
					t.Errorf("P(2) = %v, want 418 (the mean of 440 and 396, equal weights)", got)
				}
				if f.f0SamplesPerS < 10000 {
					t.Errorf("F0 dragged to %v by a CPU-bound cell", f.f0SamplesPerS)
				}
			}
			if got, _ := f.Predict(2, 224*mib); math.Abs(got-tt.want224) > 1 {
				t.Errorf("Predict(2, 224MiB) = %v, want %v", got, tt.want224)
			}
		})
	}
}
