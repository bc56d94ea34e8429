package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTimeline_Series(t *testing.T) {
	dir := t.TempDir()
	// Two cgroup samples 0.5 s apart with 0.75 CPU-seconds between them:
	// 150% of one core at t = 0.5 s.
	samples := writeFile(t, dir, "s.jsonl", `{"time":"1970-01-01T00:01:40Z","elapsed_s":0,"cg_cpu_usage_s":1,"host_cpu_pct":50}
{"time":"1970-01-01T00:01:40.5Z","elapsed_s":0.5,"cg_cpu_usage_s":1.75,"host_cpu_pct":60}
`)
	// Iterations 0.2 s apart: 0.05 s waiting (25%) and 0.1 s of step (50%).
	metrics := writeFile(t, dir, "m.jsonl", `{"iter":0,"samples":4,"data_wait_s":0.1,"step_s":0.1,"ts":100.1,"emulated":true}
{"iter":1,"samples":4,"data_wait_s":0.05,"step_s":0.1,"ts":100.3,"emulated":true}
`)
	d, err := ReadTimeline(samples, metrics)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if len(d.CPU) != 1 || !near(d.CPU[0].X, 0.5) || !near(d.CPU[0].Y, 150) {
		t.Errorf("CPU = %v, want [(0.5, 150)]", d.CPU)
	}
	if len(d.DataWait) != 1 || !near(d.DataWait[0].X, 0.3) || !near(d.DataWait[0].Y, 25) {
		t.Errorf("data wait = %v, want [(0.3, 25)]", d.DataWait)
	}
	if len(d.GPU) != 1 || !near(d.GPU[0].Y, 50) || d.GPULabel != emulatedLabel {
		t.Errorf("GPU = %v (%q), want the emulated step at 50%%", d.GPU, d.GPULabel)
	}
	// With NVML samples, the GPU series is NVML's mean over GPUs, not the step.
	samples = writeFile(t, dir, "g.jsonl", `{"time":"1970-01-01T00:01:40Z","gpu0_util_pct":80,"gpu0_mem_util_pct":10,"gpu1_util_pct":60}
`)
	d, err = ReadTimeline(samples, metrics)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.GPU) != 1 || d.GPU[0].Y != 70 || !strings.Contains(d.GPULabel, "NVML") {
		t.Errorf("GPU = %v (%q), want NVML's mean 70", d.GPU, d.GPULabel)
	}
}

func TestReadTimeline_Errors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadTimeline(filepath.Join(dir, "none"), filepath.Join(dir, "none2")); err == nil {
		t.Error("no data: want an error")
	}
	bad := writeFile(t, dir, "bad.jsonl", "{\"time\":\"1970-01-01T00:00:01Z\"}\nnot json\n")
	if _, err := ReadTimeline(bad, ""); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("err = %v, want the file and line", err)
	}
}

func TestSaveTimeline_PNG(t *testing.T) {
	dir := t.TempDir()
	metrics := writeFile(t, dir, "m.jsonl", `{"iter":0,"samples":4,"data_wait_s":0.1,"step_s":0.1,"ts":100.1}
{"iter":1,"samples":4,"data_wait_s":0.05,"step_s":0.1,"ts":100.3}
{"iter":2,"samples":4,"data_wait_s":0.02,"step_s":0.1,"ts":100.45}
`)
	d, err := ReadTimeline("", metrics)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.png")
	if err := SaveTimeline(out, d, "cpus=1 mem=unlimited"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() < 400 {
		t.Errorf("image %v too small", img.Bounds())
	}
	if err := SaveTimeline(filepath.Join(dir, "t.gif"), d, "x"); err == nil {
		t.Error("a .gif path must be refused")
	}
}

func TestReadPointTimeline_MetricsBesideSamples(t *testing.T) {
	dir := t.TempDir()
	// the profiler's names: cpus1-memunlimited.{samples,metrics}.jsonl
	samples := writeFile(t, dir, "cpus1-memunlimited.samples.jsonl", `{"time":"1970-01-01T00:01:40Z","cg_cpu_usage_s":1}
{"time":"1970-01-01T00:01:41Z","cg_cpu_usage_s":1.5}
`)
	writeFile(t, dir, "cpus1-memunlimited.metrics.jsonl", `{"iter":0,"data_wait_s":0.1,"step_s":0.1,"ts":100.1}
{"iter":1,"data_wait_s":0.1,"step_s":0.3,"ts":100.5}
`)
	d, err := ReadPointTimeline(samples)
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 CPU-seconds over 1 s = 50%; 0.1 s of 0.4 s waiting = 25%
	if len(d.CPU) != 1 || d.CPU[0].Y != 50 || len(d.DataWait) != 1 || math.Abs(d.DataWait[0].Y-25) > 1e-9 {
		t.Errorf("CPU %v, data wait %v: want 50%% and 25%% (both files read)", d.CPU, d.DataWait)
	}
}
