package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// TestProfileE2E_GPUModeIsHonestWithAndWithoutCgo profiles on this machine,
// which has no NVIDIA library, with synergy built with cgo (NVML loadable
// at run time) and without it (NVML compiled out): both say "none" for a
// job that reports nothing about its GPU, "emulated" for synthtrain, and
// --require-gpu refuses to run. It runs the two builds as processes of
// their own: what differs between them is how the binary was built.
func TestProfileE2E_GPUModeIsHonestWithAndWithoutCgo(t *testing.T) {
	needCgroups(t)
	b := buildBinaries(t)
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"); err == nil {
		t.Skip("this machine has an NVIDIA library: the test is for machines without one")
	}
	nocgo := filepath.Join(t.TempDir(), "synergy-nocgo")
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", nocgo, ".")
	build.Dir = filepath.Dir(file)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	data := genDataset(t, b.synthtrain, "language", "1MiB")
	for _, bin := range []struct{ name, path string }{{"cgo", b.synergy}, {"nocgo", nocgo}} {
		t.Run(bin.name, func(t *testing.T) {
			for _, job := range []struct {
				argv []string
				mode string
			}{
				{[]string{b.synthtrain, "--preset", "language", "--gpu-step", "5ms"}, sensitivity.GPUModeEmulated},
				// no stream: measured by wall time, which needs {iterations}
				{[]string{"/bin/sh", "-c", "sleep 0.2", "sh", "{iterations}"}, sensitivity.GPUModeNone},
			} {
				out := filepath.Join(t.TempDir(), "p.json")
				args := append([]string{"profile", "--strategy", "axes", "--cpus", "1", "--mem-limits", "64MiB",
					"--max-iterations", "30", "--stall-breakdown=false", "--data", data, "--out", out, "--"}, job.argv...)
				log, err := exec.Command(bin.path, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, log)
				}
				p, err := sensitivity.Load(out)
				if err != nil {
					t.Fatal(err)
				}
				if p.GPU.Mode != job.mode {
					t.Errorf("%s: gpu.mode = %q, want %q", job.argv[0], p.GPU.Mode, job.mode)
				}
				if !strings.Contains(string(log), "no GPU sampled through NVML") {
					t.Errorf("no warning that no GPU was sampled:\n%s", log)
				}
			}
			log, err := exec.Command(bin.path, "profile", "--require-gpu", "--cpus", "1", "--out", filepath.Join(t.TempDir(), "p.json"),
				"--", "/bin/true").CombinedOutput()
			if err == nil || !strings.Contains(string(log), "--require-gpu") {
				t.Errorf("--require-gpu without a GPU: err=%v\n%s", err, log)
			}
		})
	}
}
