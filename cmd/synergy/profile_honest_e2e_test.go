package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// smallDataset writes n one-KiB files: enough for --data, no generator.
func smallDataset(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte(strings.Repeat("x", 1024)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A job whose metrics stream is garbage fails every point as
// malformed_metrics, quoting the line, and synergy exits non-zero; a job
// that writes nothing is measured from wall time and labelled so.
func TestProfileE2E_MalformedMetricsAndWallTime(t *testing.T) {
	needCgroups(t)
	data := smallDataset(t, 8)
	dir := t.TempDir()
	job := fmt.Sprintf("e2egarbage%d", os.Getpid())
	out := filepath.Join(dir, "garbage.json")
	garbage := `for i in 1 2 3 4 5 6 7 8; do echo "step $i loss 0.5" >> "$SYNERGY_METRICS_FILE"; done`
	log, code := runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB", "--data", data,
		"--stall-breakdown=false", "--job-name", job, "--out", out, "--", "/bin/sh", "-c", garbage, "sh")
	if code == 0 || !strings.Contains(log, "no point produced a measurement") {
		t.Fatalf("garbage metrics: exit %d, want non-zero saying no point produced a measurement\n%s", code, log)
	}
	if !strings.Contains(log, "FAILED (malformed_metrics)") {
		t.Errorf("progress does not name malformed_metrics:\n%s", log)
	}
	p, err := sensitivity.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int64{0, 64 << 20} {
		c := p.Cell(1, m)
		if c == nil && m > 0 {
			continue // no CPU point succeeded: the memory axis may have had no CPU count to run at
		}
		if c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailMalformedMetrics ||
			!strings.Contains(c.Failure.Message, `first bad line 1: "step 1 loss 0.5"`) || c.SamplesPerS != 0 {
			t.Errorf("mem %d: cell %+v, want malformed_metrics quoting the first line and no throughput", m, c)
		}
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}

	// Nothing written: the wall-time fallback, labelled, with an unknown
	// interval (never ±0), where the command passes the job its iterations
	// ({iterations}) and it ends by itself (issue 44: never from a planned
	// count alone).
	out = filepath.Join(dir, "silent.json")
	log, code = runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB", "--data", data,
		"--stall-breakdown=false", "--max-iterations", "30", "--job-name", job, "--out", out, "--", "/bin/sh", "-c", "sleep 0.2", "sh", "{iterations}")
	if code != 0 {
		t.Fatalf("silent job: exit %d\n%s", code, log)
	}
	if !strings.Contains(log, "±? from wall time") {
		t.Errorf("progress does not label the wall-time figure:\n%s", log)
	}
	if p, err = sensitivity.Load(out); err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 0)
	if c == nil || c.Failure != nil || c.Stats.MetricsSource != sensitivity.MetricsWall || c.SamplesPerSCI95 <= 0 {
		t.Errorf("silent cell = %+v, want wall_clock with a non-zero (unknown) interval", c)
	}

	// --resume with another --data is refused, naming both datasets.
	other := smallDataset(t, 3)
	log, code = runCLIOutput(t, "profile", "--resume", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB", "--data", other,
		"--stall-breakdown=false", "--max-iterations", "30", "--job-name", job, "--out", out, "--", "/bin/sh", "-c", "sleep 0.2", "sh")
	if code == 0 || !strings.Contains(log, "the profile was measured with --data "+data+" (8KiB in 8 files") ||
		!strings.Contains(log, "this run has --data "+other+" (3KiB in 3 files") {
		t.Errorf("resume with another --data: exit %d, want a refusal naming both\n%s", code, log)
	}
	// ... and so is another --cpus grid.
	log, code = runCLIOutput(t, "profile", "--resume", "--strategy", "axes", "--cpus", "1,2", "--mem-limits", "64MiB", "--data", data,
		"--stall-breakdown=false", "--max-iterations", "30", "--job-name", job, "--out", out, "--", "/bin/sh", "-c", "sleep 0.2", "sh")
	if code == 0 || !strings.Contains(log, "--cpus 1, this run has --cpus 1,2") {
		t.Errorf("resume with another --cpus: exit %d, want a refusal naming --cpus\n%s", code, log)
	}
}
