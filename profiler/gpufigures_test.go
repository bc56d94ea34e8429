package profiler

import (
	"math"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/sensitivity"
)

// A CUDA job's launch: 10 s of start-up with the GPU idle, then 10 s of
// iterations keeping it 55% busy on one of two devices and 65% on the
// other. The cell's GPU figures are those of the measured iterations, not
// the launch's.
func TestGPUFigures_MeasuredWindowNotLaunch(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	agg := sample.NewAggregator()
	for i := 0; i <= 200; i++ { // 10 Hz for 20 s
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		r := sample.Record{Time: now}
		busy := i >= 100
		u0, u1, sm, pw, mem := 0.0, 0.0, 0.0, 70.0, 500e6
		if busy {
			u0, u1, sm, pw, mem = 55, 65, 27, 300, 4e9
		}
		r.Set("gpu0_util_pct", u0)
		r.Set("gpu1_util_pct", u1)
		r.Set("gpu0_job_sm_util_pct", sm)
		r.Set("gpu0_power_w", pw)
		r.Set("gpu1_power_w", pw)
		r.Set("gpu0_mem_used_bytes", mem)
		r.Set("gpu0_sm_clock_mhz", 1980)
		r.Set("gpu0_mem_util_pct", 99) // not utilisation of the SMs: never averaged in
		if err := agg.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	ts := func(s float64) float64 { return float64(t0.Unix()) + s }
	var window []jobcontract.Iteration
	for s := 11.0; s <= 19; s += 0.5 {
		window = append(window, jobcontract.Iteration{TS: ts(s)})
	}

	var st sensitivity.PointStats
	gpuFigures(agg, window, &st)
	if st.GPUStatsOver != sensitivity.GPUStatsMeasured {
		t.Fatalf("GPU figures over %q, want the measured iterations", st.GPUStatsOver)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"utilisation (mean of devices)", st.GPUUtilPctMean, 60},
		{"job SM share", st.GPUJobSMUtilPctMean, 27},
		{"power (sum of devices)", st.GPUPowerWMean, 600},
		{"SM clock", st.GPUSMClockMHzMean, 1980},
		{"memory used at peak", float64(st.GPUMemUsedBytesMax), 4e9},
	} {
		if math.Abs(c.got-c.want) > 1e-6*math.Max(1, c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}

	// One measured iteration spans no time: the launch, and said so.
	var one sensitivity.PointStats
	gpuFigures(agg, window[:1], &one)
	if one.GPUStatsOver != sensitivity.GPUStatsLaunch || one.GPUUtilPctMean > 35 || one.GPUUtilPctMean < 25 {
		t.Errorf("one measured iteration: %q, utilisation %g; want the launch's (about 30)", one.GPUStatsOver, one.GPUUtilPctMean)
	}

	// No GPU sampled: nothing recorded.
	var none sensitivity.PointStats
	gpuFigures(sample.NewAggregator(), window, &none)
	if none != (sensitivity.PointStats{}) {
		t.Errorf("no GPU samples gave %+v", none)
	}
}
