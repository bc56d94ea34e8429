package profiler

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// TestRun_OneReaderPerPoint: where the handle names its cgroup, the cgroup
// sampler is the point's only reader of it: its reads give the point's
// memory figures, and Handle.Stats is never polled beside it.
func TestRun_OneReaderPerPoint(t *testing.T) {
	cg := t.TempDir()
	for name, body := range map[string]string{
		"memory.current": "536870912\n",
		"memory.stat":    "anon 104857600\nfile 419430400\n",
	} {
		if err := os.WriteFile(filepath.Join(cg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fr := &fakeRunner{rate: trueRate, cgroup: cg}
	cfg := baseConfig(t, fr)
	cfg.CPUs, cfg.MemLimits = []float64{1}, nil
	cfg.SampleInterval = time.Millisecond
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Cell(1, 0).Stats
	if st.MemAnonBytes != 104857600 || st.MemCacheBytes != 419430400 {
		t.Errorf("anon %d, cache %d; want 104857600 and 419430400 from the sampler's reads", st.MemAnonBytes, st.MemCacheBytes)
	}
	if fr.statsCalls != 0 {
		t.Errorf("Handle.Stats polled %d times beside the cgroup sampler", fr.statsCalls)
	}
	// Without cgroup paths the profiler polls the handle instead.
	fr2 := &fakeRunner{rate: func(l runner.Limits) float64 { return 20 }}
	cfg2 := baseConfig(t, fr2)
	cfg2.CPUs, cfg2.MemLimits = []float64{1}, nil
	if _, err := run(context.Background(), cfg2); err != nil {
		t.Fatal(err)
	}
	if fr2.statsCalls == 0 {
		t.Error("a handle without cgroup paths was never polled")
	}
}

func TestFillStalls_DifferentialAndCappedByDataWait(t *testing.T) {
	stream := func(dw float64) *sensitivity.PointStats {
		return &sensitivity.PointStats{MetricsSource: sensitivity.MetricsStream, DataWaitFraction: dw}
	}
	p := &sensitivity.Profile{
		StepOnly: &sensitivity.StepOnly{SamplesPerS: 400}, // t_step = 2.5 ms per sample
		Cells: []sensitivity.Cell{
			// warm, 1 core: t = t_warm = 10 ms → prep = (10 − 2.5) / 10 = 0.75
			{CPUs: 1, Measured: true, SamplesPerS: 100, Stats: stream(0.8)},
			// cold at 64MiB: t = 40 ms → prep = 7.5 / 40 = 0.1875,
			// fetch = (40 − 10) / 40 = 0.75
			{CPUs: 1, MemLimitBytes: 64 << 20, Measured: true, SamplesPerS: 25, Stats: stream(0.95)},
			// cold at 1GiB on a busy host: t = 12.5 ms → prep 0.6, fetch
			// 0.2, but the loop waited only 40% of the time: both scale by
			// 0.4 / 0.8 → prep 0.3, fetch 0.1
			{CPUs: 1, MemLimitBytes: 1 << 30, Measured: true, SamplesPerS: 80, Stats: stream(0.4)},
			// predicted cells get no breakdown
			{CPUs: 2, SamplesPerS: 200},
		},
	}
	fillStalls(p)
	for _, tc := range []struct {
		i           int
		prep, fetch float64
		bound       string
	}{
		{0, 0.75, 0, "prep"},
		{1, 0.1875, 0.75, "fetch"},
		{2, 0.3, 0.1, "prep"},
	} {
		st := p.Cells[tc.i].Stall
		if st == nil || math.Abs(st.PrepStallFraction-tc.prep) > 1e-9 || math.Abs(st.FetchStallFraction-tc.fetch) > 1e-9 || st.Bound != tc.bound {
			t.Errorf("cell %d: stall %+v, want prep %v fetch %v bound %s", tc.i, st, tc.prep, tc.fetch, tc.bound)
		}
	}
	if p.Cells[3].Stall != nil {
		t.Error("a predicted cell got a stall breakdown")
	}
	p.StepOnly.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed}
	fillStalls(p)
	if p.Cells[0].Stall != nil {
		t.Error("no breakdown without a successful step-only run")
	}
}

// The sink is listed with the samplers: the records it wrote as its
// samples over every point, and the error of a record it refused.
func TestSampling_SinkFailuresReachTheProfile(t *testing.T) {
	rec := &recorder{prof: &sensitivity.Profile{}}
	for _, fail := range []bool{false, true, false} {
		sink := sample.SinkFunc(func(sample.Record) error {
			if fail {
				return errors.New("write timeline: no space left on device")
			}
			return nil
		})
		loop, err := sample.NewLoop(time.Millisecond, sink)
		if err != nil {
			t.Fatal(err)
		}
		loop.Tick(time.Now())
		loop.Tick(time.Now())
		ps := &pointSampling{loop: loop, agg: sample.NewAggregator(), cancel: func() {}}
		ps.stop(rec, &sensitivity.PointStats{}, nil)
	}
	if len(rec.prof.Samplers) != 1 {
		t.Fatalf("samplers %+v, want the sink alone", rec.prof.Samplers)
	}
	got := rec.prof.Samplers[0]
	if got.Name != "sink" || got.Samples != 4 || len(got.Errors) != 1 || !strings.Contains(got.Errors[0], "no space left on device") {
		t.Errorf("sink %+v; want 4 records written over the three points and the refused one's error", got)
	}
}
