package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/sensitivity"
)

// TestProfileE2E_PythonHelper profiles a Python job that writes its metrics
// through models/pytorch/synergy_metrics.py (a standard-library stand-in for
// a PyTorch script, testdata/stdlib_train.py: torch cannot be installed
// here) with the local runner, synergy running in this process: the profiler must read the helper's stream at
// every point, the step-only run included, and the job's emulated step must
// bound the throughput from above.
func TestProfileE2E_PythonHelper(t *testing.T) {
	needCgroups(t)
	synthtrain := buildSynthtrain(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		testreq.Skip(t, "python3", err.Error())
	}
	// Copy the scripts out of the tree so that no __pycache__ is left in it.
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "models", "pytorch")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"synergy_metrics.py", filepath.Join("testdata", "stdlib_train.py")} {
		body, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := genDataset(t, synthtrain, "language", "1MiB")
	const (
		batch  = 16
		stepMS = 20
	)
	// The step is a 20 ms sleep per batch of 16, so no cell can exceed
	// 16 / 0.020 = 800 samples/s (2% allowed for timer rounding in ts).
	const maxSamplesPerS = batch / (stepMS / 1000.0) * 1.02
	out := filepath.Join(t.TempDir(), "profile.json")
	log, code := runCLIOutput(t, "profile", "--strategy", "grid", "--cpus", "1", "--mem-limits", "64MiB",
		"-b", "16", "--data", data, "--max-iterations", "200", "--point-timeout", "60s",
		"--job-name", e2eJobName(t), "--out", out,
		"--", py, filepath.Join(dir, "testdata", "stdlib_train.py"), "--step-ms", "20")
	if code != 0 {
		t.Fatalf("synergy profile: exit %d\n%s", code, log)
	}
	p, err := sensitivity.Load(out)
	if err != nil {
		t.Fatalf("load profile: %v\n%s", err, log)
	}
	measured := 0
	for _, c := range p.Cells {
		if !c.Measured {
			continue
		}
		measured++
		if c.Stats != nil {
			t.Logf("cpus=%g mem=%d: %.1f ±%.1f samples/s, %d iterations (%s), source %s, first pass %.1f",
				c.CPUs, c.MemLimitBytes, c.SamplesPerS, c.SamplesPerSCI95, c.Stats.Iterations, c.Stats.StopReason, c.Stats.MetricsSource, c.Stats.FirstPassSamplesPS)
		}
		if c.Failure != nil {
			t.Errorf("cpus=%g mem=%d: %s: %s\n%s", c.CPUs, c.MemLimitBytes, c.Failure.Class, c.Failure.Message, log)
			continue
		}
		if c.Stats.MetricsSource != sensitivity.MetricsStream {
			t.Errorf("cpus=%g mem=%d: metrics source %q, want %q (the helper's lines were not read)", c.CPUs, c.MemLimitBytes, c.Stats.MetricsSource, sensitivity.MetricsStream)
		}
		if !(c.SamplesPerS > 0 && c.SamplesPerS <= maxSamplesPerS) {
			t.Errorf("cpus=%g mem=%d: %.1f samples/s, want in (0, %.0f]", c.CPUs, c.MemLimitBytes, c.SamplesPerS, maxSamplesPerS)
		}
		if c.Stats.StepSecondsMean < stepMS/1000.0 {
			t.Errorf("cpus=%g mem=%d: mean step %.4f s is shorter than the job's %d ms sleep", c.CPUs, c.MemLimitBytes, c.Stats.StepSecondsMean, stepMS)
		}
		if c.MemLimitBytes > 0 && c.Stats.FirstPassSamplesPS <= 0 {
			t.Errorf("cpus=%g mem=%d: no first-pass figure: the helper's epoch was not seen", c.CPUs, c.MemLimitBytes)
		}
	}
	if measured != 2 {
		t.Errorf("%d cells measured, want 2 (cpus=1 × 64MiB, unlimited)\n%s", measured, log)
	}
	if p.GPU.Mode != sensitivity.GPUModeEmulated && p.GPU.Mode != sensitivity.GPUModeNVML {
		t.Errorf("gpu mode %q: the helper's emulated flag was not seen", p.GPU.Mode)
	}
}
