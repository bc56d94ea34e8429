package main

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A profile keeps each point's samples and metrics beside it, and
// `synergy matrix show --timeline` draws one point from them.
func TestMatrixE2E_TimelineOfAMeasuredPoint(t *testing.T) {
	needCgroups(t)
	b := buildBinaries(t)
	data := genDataset(t, b, "language", "1MiB")
	out := filepath.Join(t.TempDir(), "p.json")
	if log, err := exec.Command(b.synergy, "profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB",
		"--max-iterations", "40", "--data", data, "--out", out, "--",
		b.synthtrain, "--preset", "language", "--gpu-step", "10ms").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, f := range []string{"cpus1-memunlimited.samples.jsonl", "cpus1-memunlimited.metrics.jsonl", "cpus1-mem64MiB.samples.jsonl", "cpus1-steponly.metrics.jsonl"} {
		if st, err := os.Stat(filepath.Join(strings.TrimSuffix(out, ".json")+".timeline", f)); err != nil || st.Size() == 0 {
			t.Errorf("timeline file %s: %v", f, err)
		}
	}
	plot := filepath.Join(t.TempDir(), "t.png")
	log, err := exec.Command(b.synergy, "matrix", "show", out, "--timeline", "cpus=1 mem=64MiB", "--plot", plot).CombinedOutput()
	if err != nil || !strings.Contains(string(log), "emulated GPU step") {
		t.Fatalf("%v\n%s", err, log)
	}
	raw, _ := os.ReadFile(plot)
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Errorf("timeline plot is not a PNG: %v", err)
	}
	log, err = exec.Command(b.synergy, "matrix", "show", out, "--timeline", "cpus=2 mem=64MiB", "--plot", plot).CombinedOutput()
	if err == nil || !strings.Contains(string(log), "is not a measured point") {
		t.Errorf("unmeasured point: err=%v\n%s", err, log)
	}
	log, err = exec.Command(b.synergy, "matrix", "show", out, "--timeline", "cores=2").CombinedOutput()
	if err == nil || !strings.Contains(string(log), "--timeline") {
		t.Errorf("bad point: err=%v\n%s", err, log)
	}
}
