package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile keeps each point's samples and metrics beside it, and
// `synergy matrix show --timeline` draws one point from them. Both commands
// run in this process (the local runner's gate is this test binary: see
// TestMain).
func TestMatrixE2E_TimelineOfAMeasuredPoint(t *testing.T) {
	needCgroups(t)
	synthtrain := buildSynthtrain(t)
	data := genDataset(t, synthtrain, "language", "1MiB")
	out := filepath.Join(t.TempDir(), "p.json")
	if log, code := runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB",
		"--max-iterations", "40", "--data", data, "--out", out, "--",
		synthtrain, "--preset", "language", "--gpu-step", "10ms"); code != 0 {
		t.Fatalf("exit %d\n%s", code, log)
	}
	for _, f := range []string{"cpus1-memunlimited.samples.jsonl", "cpus1-memunlimited.metrics.jsonl", "cpus1-mem64MiB.samples.jsonl", "cpus1-steponly.metrics.jsonl"} {
		if st, err := os.Stat(filepath.Join(strings.TrimSuffix(out, ".json")+".timeline", f)); err != nil || st.Size() == 0 {
			t.Errorf("timeline file %s: %v", f, err)
		}
	}
	plot := filepath.Join(t.TempDir(), "t.png")
	log, code := runCLIOutput(t, "matrix", "show", out, "--timeline", "cpus=1 mem=64MiB", "--plot", plot)
	if code != 0 || !strings.Contains(log, "emulated GPU step") {
		t.Fatalf("exit %d\n%s", code, log)
	}
	raw, _ := os.ReadFile(plot)
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Errorf("timeline plot is not a PNG: %v", err)
	}
	log, code = runCLIOutput(t, "matrix", "show", out, "--timeline", "cpus=2 mem=64MiB", "--plot", plot)
	if code == 0 || !strings.Contains(log, "is not a measured point") {
		t.Errorf("unmeasured point: exit %d\n%s", code, log)
	}
	log, code = runCLIOutput(t, "matrix", "show", out, "--timeline", "cores=2")
	if code == 0 || !strings.Contains(log, "--timeline") {
		t.Errorf("bad point: exit %d\n%s", code, log)
	}
}
