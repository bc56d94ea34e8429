package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeSampler sets fixed values, or fails, or panics, as scripted per call.
type fakeSampler struct {
	name   string
	values map[string]float64
	errs   []error // error for call i (nil = success); past the end: success
	panics bool
	calls  int
}

var _ Sampler = (*fakeSampler)(nil)

func (f *fakeSampler) Name() string { return f.name }

func (f *fakeSampler) Sample(now time.Time, out *Record) error {
	i := f.calls
	f.calls++
	if f.panics {
		panic("boom")
	}
	if i < len(f.errs) && f.errs[i] != nil {
		return f.errs[i]
	}
	for k, v := range f.values {
		out.Set(k, v)
	}
	return nil
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestLoop_FailingSamplerDoesNotHideOthers(t *testing.T) {
	ok := &fakeSampler{name: "host", values: map[string]float64{"host_cpu_pct": 12.5}}
	bad := &fakeSampler{name: "cgroup", errs: []error{errors.New("read cpu.stat: gone"), errors.New("read cpu.stat: gone")}}
	pan := &fakeSampler{name: "nvml", panics: true}
	agg := NewAggregator()
	l, err := NewLoop(0, agg, ok, bad, pan)
	if err != nil {
		t.Fatal(err)
	}
	if l.interval != DefaultInterval {
		t.Errorf("interval = %v, want default %v", l.interval, DefaultInterval)
	}
	for i := 0; i < 3; i++ {
		rec := l.Tick(t0.Add(time.Duration(i) * DefaultInterval))
		if v, ok := rec.Get("host_cpu_pct"); !ok || v != 12.5 {
			t.Errorf("tick %d: host_cpu_pct = %v, %v; want 12.5 despite the failing samplers", i, v, ok)
		}
	}
	h := l.Health()
	if len(h) != 3 {
		t.Fatalf("health has %d entries, want 3", len(h))
	}
	// host: 3 ok; cgroup: 2 failures (same message, deduplicated) then 1 ok;
	// nvml: 3 panics recorded as errors.
	want := []struct {
		name            string
		samples, failed int
		errors          []string
	}{
		{"host", 3, 0, nil},
		{"cgroup", 1, 2, []string{"read cpu.stat: gone (x2)"}},
		{"nvml", 0, 3, []string{"panic: boom (x3)"}},
	}
	for i, w := range want {
		g := h[i]
		if g.Name != w.name || g.Samples != w.samples || g.Failures != w.failed || fmt.Sprint(g.Errors) != fmt.Sprint(w.errors) {
			t.Errorf("health[%d] = %+v, want name=%s samples=%d failures=%d errors=%v", i, g, w.name, w.samples, w.failed, w.errors)
		}
	}
	if s, ok := agg.Summary("host_cpu_pct"); !ok || s.Count != 3 {
		t.Errorf("aggregator saw host_cpu_pct %d times, want 3", s.Count)
	}
	if sh := l.SinkHealth(); sh.Samples != 3 || sh.Failures != 0 {
		t.Errorf("sink health = %+v, want 3 writes, no failures", sh)
	}
}

func TestLoop_ErrorsAreCapped(t *testing.T) {
	n := MaxDistinctErrors + 5
	errs := make([]error, n+1)
	for i := 0; i < n; i++ {
		errs[i] = fmt.Errorf("error %d", i)
	}
	errs[n] = errors.New("error 0") // a repeat of a kept message still counts
	f := &fakeSampler{name: "x", errs: errs}
	l, err := NewLoop(time.Millisecond, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= n; i++ {
		l.Tick(t0)
	}
	h := l.Health()[0]
	// MaxDistinctErrors kept, the first with (x2), then one "+5 more" line.
	if len(h.Errors) != MaxDistinctErrors+1 {
		t.Fatalf("errors = %q, want %d lines", h.Errors, MaxDistinctErrors+1)
	}
	if h.Errors[0] != "error 0 (x2)" || h.Errors[MaxDistinctErrors] != "+5 more distinct errors" {
		t.Errorf("errors = %q", h.Errors)
	}
	if h.Failures != n+1 {
		t.Errorf("failures = %d, want %d", h.Failures, n+1)
	}
}

func TestNewLoop_BadSamplers(t *testing.T) {
	tests := []struct {
		name     string
		samplers []Sampler
		want     string
	}{
		{"nil", []Sampler{nil}, "sampler 0 is nil"},
		{"empty name", []Sampler{&fakeSampler{}}, "empty name"},
		{"duplicate", []Sampler{&fakeSampler{name: "a"}, &fakeSampler{name: "a"}}, `two samplers are named "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLoop(0, nil, tt.samplers...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestLoop_RunStopsOnContext runs the real ticker until the sink has seen
// five records, then cancels; Run must return and sample no more.
func TestLoop_RunStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	sink := SinkFunc(func(r Record) error {
		seen++
		if seen == 5 {
			cancel()
		}
		return nil
	})
	f := &fakeSampler{name: "f", values: map[string]float64{"v": 1}}
	l, err := NewLoop(time.Millisecond, sink, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(ctx); err != nil {
		t.Fatalf("run: %v", err)
	}
	if seen != 5 || f.calls != 5 {
		t.Errorf("after cancel at record 5: sink saw %d, sampler called %d times; want 5 and 5", seen, f.calls)
	}
	if h := l.Health()[0]; h.Samples != 5 {
		t.Errorf("samples = %d, want 5", h.Samples)
	}
	// A loop started on a done context samples nothing.
	if err := l.Run(ctx); err != nil || f.calls != 5 {
		t.Errorf("run on a done context: err=%v calls=%d, want nil and 5", err, f.calls)
	}
}

func TestRecord_SetDropsNonFinite(t *testing.T) {
	var r Record
	r.Set("a", 1)
	r.Set("nan", math.NaN())
	r.Set("inf", math.Inf(1))
	if got := fmt.Sprint(r.Names()); got != "[a]" {
		t.Errorf("names = %s, want [a]", got)
	}
}

func TestJSONLWriter_Lines(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSONLWriter(&buf)
	recs := []Record{
		{Time: t0, Values: map[string]float64{"host_cpu_pct": 50, "cg_mem_cache_bytes": 1 << 30, "gpu0_power_w": 312.25}},
		{Time: t0.Add(100 * time.Millisecond), Values: map[string]float64{"host_cpu_pct": 12.5, "odd \"name\"": 1, "bad": math.NaN()}},
		{Time: t0.Add(250 * time.Millisecond)},
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"time":"2025-01-02T03:04:05Z","elapsed_s":0,"cg_mem_cache_bytes":1073741824,"gpu0_power_w":312.25,"host_cpu_pct":50}
{"time":"2025-01-02T03:04:05.1Z","elapsed_s":0.1,"host_cpu_pct":12.5,"odd \"name\"":1}
{"time":"2025-01-02T03:04:05.25Z","elapsed_s":0.25}
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("line %d is not JSON: %v", i+1, err)
		}
	}
	if err := w.Write(Record{Time: t0, Values: map[string]float64{"time": 1}}); err == nil || !strings.Contains(err.Error(), `"time" is reserved`) {
		t.Errorf("reserved key: err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestLoop_SinkErrorRecorded(t *testing.T) {
	agg := NewAggregator()
	l, err := NewLoop(0, Tee(NewJSONLWriter(failWriter{}), agg), &fakeSampler{name: "f", values: map[string]float64{"v": 2}})
	if err != nil {
		t.Fatal(err)
	}
	l.Tick(t0)
	l.Tick(t0)
	sh := l.SinkHealth()
	if sh.Failures != 2 || len(sh.Errors) != 1 || !strings.Contains(sh.Errors[0], "disk full") {
		t.Errorf("sink health = %+v, want 2 failures mentioning disk full", sh)
	}
	// Tee still fed the aggregator after the writer failed.
	if s, _ := agg.Summary("v"); s.Count != 2 {
		t.Errorf("aggregator count = %d, want 2", s.Count)
	}
}

func TestAggregator_Summary(t *testing.T) {
	a := NewAggregator()
	// cg_cpu_usage_s is a counter: 1.0, 1.5, 3.0 at 0, 1, 2 s
	// → delta 2.0, rate 2.0/2 = 1.0 /s; mean (1+1.5+3)/3 = 1.8333.
	// gpu0_util_pct is a gauge present in two records: mean (40+80)/2 = 60.
	vals := []map[string]float64{
		{"cg_cpu_usage_s": 1.0, "gpu0_util_pct": 40},
		{"cg_cpu_usage_s": 1.5},
		{"cg_cpu_usage_s": 3.0, "gpu0_util_pct": 80},
	}
	for i, v := range vals {
		a.Write(Record{Time: t0.Add(time.Duration(i) * time.Second), Values: v})
	}
	const tol = 1e-9
	tests := []struct {
		name                            string
		count                           int
		mean, min, max, delta, ratePerS float64
	}{
		{"cg_cpu_usage_s", 3, 5.5 / 3, 1, 3, 2, 1},
		{"gpu0_util_pct", 2, 60, 40, 80, 40, 20},
	}
	for _, tt := range tests {
		s, ok := a.Summary(tt.name)
		if !ok {
			t.Fatalf("%s missing", tt.name)
		}
		got := []float64{s.Mean, s.Min, s.Max, s.Delta(), s.RatePerS()}
		want := []float64{tt.mean, tt.min, tt.max, tt.delta, tt.ratePerS}
		for i := range got {
			if math.Abs(got[i]-want[i]) > tol {
				t.Errorf("%s: [mean min max delta rate] = %v, want %v", tt.name, got, want)
				break
			}
		}
		if s.Count != tt.count {
			t.Errorf("%s: count = %d, want %d", tt.name, s.Count, tt.count)
		}
	}
	if _, ok := a.Summary("absent"); ok {
		t.Error("absent series reported present")
	}
	if got := fmt.Sprint(a.Names()); got != "[cg_cpu_usage_s gpu0_util_pct]" {
		t.Errorf("names = %s", got)
	}
	one := Summary{Count: 1, First: 5, Last: 5, FirstTime: t0, LastTime: t0}
	if one.RatePerS() != 0 {
		t.Errorf("rate of a single sample = %v, want 0", one.RatePerS())
	}
}
