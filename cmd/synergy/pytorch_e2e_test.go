package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/docker"
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

// torchPython returns Debian's interpreter when it imports torch,
// torchvision and torchaudio, else skips the test (failing under
// SYNERGY_REQUIRE=torch).
func torchPython(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	py := os.Getenv("SYNERGY_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	out, err := exec.Command(py, "-c", "import torch, torchvision, torchaudio").CombinedOutput()
	if err != nil {
		testreq.Skip(t, "torch", fmt.Sprintf("%s cannot import torch, torchvision and torchaudio (scripts/install-torch.sh installs them): %v %s", py, err, out))
	}
	return py
}

// pytorchSrc is models/pytorch in this tree.
func pytorchSrc() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "models", "pytorch")
}

// pytorchImage returns the synergy/pytorch image of this tree's sources
// (scripts/build-pytorch-image.sh), skipping the test (failing under
// SYNERGY_REQUIRE=torch-docker) when it is not built or no engine answers.
func pytorchImage(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(pytorchSrc(), "..", "..", "scripts", "build-pytorch-image.sh"), "--print-tag").Output()
	if err != nil {
		t.Fatalf("build-pytorch-image.sh --print-tag: %v", err)
	}
	tag := strings.TrimSpace(string(out))
	r, err := docker.New(docker.Options{Image: tag})
	if err != nil {
		testreq.Skip(t, "torch-docker", err.Error())
	}
	defer r.Close()
	if err := r.CheckImage(context.Background()); err != nil {
		testreq.Skip(t, "torch-docker", fmt.Sprintf("%v (scripts/build-pytorch-image.sh builds it, about 16 minutes the first time)", err))
	}
	return tag
}

// genPyData makes a dataset with gen_data.py (kind image, speech or text),
// cached per test binary run under the test's temp dir.
func genPyData(t *testing.T, py, kind, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data-"+kind)
	cmd := exec.Command(py, filepath.Join(pytorchSrc(), "gen_data.py"), kind, "--dir", dir, "--bytes", size, "--seed", "1")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen_data.py %s: %v\n%s", kind, err, out)
	}
	return dir
}

// pyRunner is how a PyTorch test runs its jobs: the local runner with the
// tree's scripts, or the docker runner with the image's.
type pyRunner struct {
	name   string
	flags  []string // --runner and its flags
	py     string   // the interpreter, as the runner sees it
	script string   // directory of models/pytorch, as the runner sees it
}

// pyRunners returns the local runner and, when the image is built, the
// docker runner; each as a subtest.
func forEachPyRunner(t *testing.T, f func(t *testing.T, r pyRunner)) {
	py := torchPython(t)
	t.Run("local", func(t *testing.T) {
		needCgroups(t)
		f(t, pyRunner{name: "local", flags: []string{"--runner", "local"}, py: py, script: pytorchSrc()})
	})
	t.Run("docker", func(t *testing.T) {
		img := pytorchImage(t)
		f(t, pyRunner{name: "docker", flags: []string{"--runner", "docker", "--docker-img", img}, py: "/usr/bin/python3", script: "/opt/synergy"})
	})
}

// probeReports reads the probe reports kept in a profile's timeline, by
// file label (cpus2-memunlimited...).
func probeReports(t *testing.T, profile string) map[string]map[string]any {
	t.Helper()
	dir := strings.TrimSuffix(profile, filepath.Ext(profile)) + ".timeline"
	files, _ := filepath.Glob(filepath.Join(dir, "*.probe.json"))
	out := map[string]map[string]any{}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".probe.json")] = r
	}
	return out
}

// checkLoaderAffinity checks that every loader's process and workers in
// every kept probe report ran on exactly the point's cpuset: the first
// ceil(cpus) of the cores the run claimed. It returns how many workers
// were checked.
func checkLoaderAffinity(t *testing.T, reports map[string]map[string]any, stderr string) int {
	t.Helper()
	online := claimedCPUs(t, stderr)
	workers := 0
	for label, r := range reports {
		var cpus float64
		if _, err := fmt.Sscanf(label, "cpus%g-", &cpus); err != nil {
			t.Errorf("report %s: no cpus in its label", label)
			continue
		}
		want, _ := runner.CPUSetFor(cpus, online)
		loaders, _ := r["loaders"].([]any)
		for _, l := range loaders {
			lm := l.(map[string]any)
			if lm["batches"].(float64) == 0 {
				continue
			}
			if got := intsOf(lm["cpus"]); !slices.Equal(got, want) {
				t.Errorf("%s: loader %v ran in a process on CPUs %v, want the point's %v", label, lm["site"], got, want)
			}
			wc, _ := lm["worker_cpus"].(map[string]any)
			if int(lm["num_workers"].(float64)) != len(wc) {
				t.Errorf("%s: loader %v has %v workers but %d were seen", label, lm["site"], lm["num_workers"], len(wc))
			}
			for pid, c := range wc {
				workers++
				if got := intsOf(c); !slices.Equal(got, want) {
					t.Errorf("%s: loader worker %s ran on CPUs %v, want the point's %v", label, pid, got, want)
				}
			}
		}
	}
	return workers
}

// claimedCPUs are the cores the run claimed in the host's core registry,
// as its stderr says ("points run on CPU 1, claimed for this run in …"): a
// point's cpuset is the first ceil(cpus) of them, not of the online CPUs
// (another synergy run on the host may hold CPU 0).
func claimedCPUs(t *testing.T, stderr string) []int {
	t.Helper()
	m := regexp.MustCompile(`points run on CPU (\S+), claimed`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the run did not say which cores it claimed:\n%s", stderr)
	}
	cpus, err := runner.ParseCPUSet(m[1])
	if err != nil {
		t.Fatalf("claimed cores %q: %v", m[1], err)
	}
	return cpus
}

func intsOf(v any) []int {
	l, _ := v.([]any)
	out := []int{}
	for _, x := range l {
		out = append(out, int(x.(float64)))
	}
	return out
}

// quickPoint are flags that keep a PyTorch point short: a few measured
// iterations, no convergence needed.
var quickPoint = []string{"--max-iterations", "12", "--min-iterations", "10", "--warmup", "2", "--target-ci", "50",
	"--point-timeout", "240s", "--stall-breakdown=false", "--env", "PYTHONDONTWRITEBYTECODE=1"}

// TestPyTorchE2E_ReferenceJobs profiles each reference job (image, language,
// speech), as it follows the contract itself, for a few iterations under
// both runners: every point is measured from the job's own stream, the
// job is named after its script, and every DataLoader worker ran inside the
// point's cpuset.
func TestPyTorchE2E_ReferenceJobs(t *testing.T) {
	forEachPyRunner(t, func(t *testing.T, r pyRunner) {
		py := torchPython(t)
		jobs := []struct {
			script, kind, size string
			args               []string
		}{
			{"train_imagenet.py", "image", "3MiB", []string{"--emulate-gpu", "v100"}},
			{"train_lm.py", "text", "2MiB", []string{"--emulate-gpu", "v100"}},
			{"train_speech.py", "speech", "3MiB", []string{"--emulate-gpu", "v100"}},
		}
		for _, j := range jobs {
			t.Run(strings.TrimSuffix(j.script, ".py"), func(t *testing.T) {
				data := genPyData(t, py, j.kind, j.size)
				args := append(append(append([]string{}, r.flags...), quickPoint...),
					"--strategy", "synergy", "--cpus", "2", "--mem-limits", "1GiB", "-b", "8", "--data", data,
					"--", r.py, filepath.Join(r.script, j.script))
				run := runProfileCmd(t, nil, append(args, j.args...)...)
				p := run.load(t)
				if p.Job.Name != strings.TrimSuffix(j.script, ".py") {
					t.Errorf("job name %q, want the script's", p.Job.Name)
				}
				for _, c := range p.MeasuredOK() {
					if c.Stats.MetricsSource != sensitivity.MetricsStream {
						t.Errorf("cpus=%g mem=%d: measured from %s, not the job's stream\n%s", c.CPUs, c.MemLimitBytes, c.Stats.MetricsSource, run.stderr)
					}
				}
				if n := len(p.MeasuredOK()); n != 1 {
					t.Errorf("%d cells measured, want 1\n%s", n, run.stderr)
				}
				if p.GPU.Mode != sensitivity.GPUModeEmulated {
					t.Errorf("gpu mode %q, want emulated", p.GPU.Mode)
				}
				reps := probeReports(t, run.out)
				if len(reps) != 1 {
					t.Fatalf("%d probe reports kept, want one per point", len(reps))
				}
				for label, rep := range reps {
					if rep["stream"] != "script" {
						t.Errorf("%s: probe stream %v, want script (the job writes its own)", label, rep["stream"])
					}
				}
				if w := checkLoaderAffinity(t, reps, run.stderr); w < 2 {
					t.Errorf("%d loader workers checked, want 2", w)
				}
				if r.name == "docker" {
					assertNoProfileContainers(t, p.Job.Name)
				}
			})
		}
	})
}

// fileSums hashes every file under dir, to show a script's files untouched.
func fileSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		sums[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestPyTorchE2E_UnmodifiedImageNetScript profiles a script in the shape of
// the ImageNet reference script (positional data directory, -j, -b,
// --epochs; no metrics, no iteration cap), run unmodified from its own
// file, through an argument template, the injected probe and its
// loader-only mode at an emulated V100's ResNet-18 step, over two CPU counts
// and two memory limits: every point is measured from the probe's stream,
// the profile says emulated and names the step, the loader workers ran in
// the point's cpuset, and the script's files are untouched.
func TestPyTorchE2E_UnmodifiedImageNetScript(t *testing.T) {
	forEachPyRunner(t, func(t *testing.T, r pyRunner) {
		py := torchPython(t)
		data := genPyData(t, py, "image", "4MiB")
		src := filepath.Join(pytorchSrc(), "testdata")
		before := fileSums(t, src)
		args := append(append(append([]string{}, r.flags...), quickPoint...),
			"--strategy", "axes", "--cpus", "1,2", "--mem-limits", "768MiB,1GiB", "-b", "16", "--data", data,
			"--emulate-gpu", "v100", "--model", "resnet18", "--job-name", e2eJobName(t),
			"--", r.py, filepath.Join(r.script, "testdata", "imagenet_ref.py"), "{data}", "-j", "{workers}", "-b", "{batch}", "--epochs", "1000")
		run := runProfileCmd(t, nil, args...)
		p := run.load(t)
		ok := p.MeasuredOK()
		if len(ok) != 4 {
			t.Errorf("%d cells measured well, want 4 (2 CPU, 2 memory)\n%s", len(ok), run.stderr)
		}
		for _, c := range ok {
			if c.Stats.MetricsSource != sensitivity.MetricsStream {
				t.Errorf("cpus=%g mem=%d: measured from %s, not the probe's stream", c.CPUs, c.MemLimitBytes, c.Stats.MetricsSource)
			}
		}
		if p.GPU.Mode != sensitivity.GPUModeEmulated || !strings.Contains(p.GPU.Note, "resnet18") || !strings.Contains(p.GPU.Note, "v100") {
			t.Errorf("gpu %+v: want emulated, naming the step used", p.GPU)
		}
		// One report per launch (the point it ended at): points measured in place
		// in a running launch share it.
		reps := probeReports(t, run.out)
		if len(reps) != p.Cost.Launches || len(reps) == 0 {
			t.Errorf("%d probe reports kept, want one per launch (%d)", len(reps), p.Cost.Launches)
		}
		for label, rep := range reps {
			// capped by the probe, or stopped by the profiler once it had
			// enough: final either way, never "running"
			if rep["stream"] != "probe" || (rep["state"] != "capped" && rep["state"] != "stopped") {
				t.Errorf("%s: probe stream %v state %v, want probe, capped or stopped", label, rep["stream"], rep["state"])
			}
			if e, _ := rep["emulated"].(map[string]any); e == nil || !(e["step_s"].(float64) > 0) {
				t.Errorf("%s: no emulated step in the report: %v", label, rep["emulated"])
			}
		}
		if w := checkLoaderAffinity(t, reps, run.stderr); w < len(reps) {
			t.Errorf("%d loader workers checked, want at least one per point", w)
		}
		if after := fileSums(t, src); !maps.Equal(before, after) {
			t.Errorf("the script's directory changed during profiling")
		}
		if r.name == "docker" {
			assertNoProfileContainers(t, e2eJobName(t))
		}
	})
}

// TestPyTorchE2E_ProbeLoaders: a script with two DataLoaders (an
// in-process eval loader iterated first, a shuffled train loader with
// workers) is measured from the train loader, with the eval loader's
// num_workers=0 kept; a script that builds no loader is measured from wall
// time and the profile says why.
func TestPyTorchE2E_ProbeLoaders(t *testing.T) {
	forEachPyRunner(t, func(t *testing.T, r pyRunner) {
		out := "/tmp/two_loaders_out.json"
		if r.name == "local" {
			out = filepath.Join(t.TempDir(), "two.json")
		}
		args := append(append(append([]string{}, r.flags...), quickPoint...),
			"--strategy", "grid", "--cpus", "1", "--mem-limits", "512MiB", "-b", "8", "--job-name", e2eJobName(t),
			"--", r.py, filepath.Join(r.script, "testdata", "two_loaders.py"), out, "--epochs", "100", "--batch", "{batch}", "--workers", "3", "--train", "64")
		run := runProfileCmd(t, nil, args...)
		p := run.load(t)
		if len(p.MeasuredOK()) != 2 {
			t.Errorf("two loaders: %d cells measured, want 2\n%s", len(p.MeasuredOK()), run.stderr)
		}
		reps := probeReports(t, run.out)
		if len(reps) == 0 {
			t.Fatalf("no probe report kept\n%s", run.stderr)
		}
		for label, rep := range reps {
			loaders, _ := rep["loaders"].([]any)
			if len(loaders) != 2 {
				t.Fatalf("%s: %d loaders reported, want 2: %v", label, len(loaders), rep)
			}
			eval, train := loaders[0].(map[string]any), loaders[1].(map[string]any)
			if eval["primary"] != false || train["primary"] != true {
				t.Errorf("%s: primary eval=%v train=%v, want the shuffled train loader", label, eval["primary"], train["primary"])
			}
			if eval["num_workers"].(float64) != 0 || !strings.Contains(fmt.Sprint(eval["workers_note"]), "kept 0") {
				t.Errorf("%s: eval loader workers %v note %v, want 0 kept", label, eval["num_workers"], eval["workers_note"])
			}
			if train["num_workers"].(float64) != 1 {
				t.Errorf("%s: train loader workers %v, want the point's 1 (SYNERGY_PROBE_WORKERS over the script's 3)", label, train["num_workers"])
			}
		}
		for _, c := range p.MeasuredOK() {
			if c.Stats.MetricsSource != sensitivity.MetricsStream {
				t.Errorf("cpus=%g mem=%d: measured from %s, want the probe's stream", c.CPUs, c.MemLimitBytes, c.Stats.MetricsSource)
			}
		}
		checkLoaderAffinity(t, reps, run.stderr)

		args = append(append(append([]string{}, r.flags...), quickPoint...),
			"--strategy", "grid", "--cpus", "1", "--mem-limits", "512MiB", "--job-name", e2eJobName(t)+"-none",
			"--", r.py, filepath.Join(r.script, "testdata", "no_loader.py"), "{iterations}")
		run = runProfileCmd(t, nil, args...)
		p = run.load(t)
		if len(p.MeasuredOK()) == 0 {
			t.Errorf("no loader: nothing measured\n%s", run.stderr)
		}
		for _, c := range p.MeasuredOK() {
			if c.Stats.MetricsSource != sensitivity.MetricsWall {
				t.Errorf("no loader: cpus=%g mem=%d measured from %s, want wall_clock", c.CPUs, c.MemLimitBytes, c.Stats.MetricsSource)
			}
		}
		if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "no torch.utils.data.DataLoader was iterated") }) {
			t.Errorf("warnings %q do not say the probe saw no loader", p.Warnings)
		}
		if r.name == "docker" {
			assertNoProfileContainers(t, e2eJobName(t))
			assertNoProfileContainers(t, e2eJobName(t)+"-none")
		}
	})
}

// TestPyTorchE2E_FailuresRecorded: a PyTorch point OOM-killed (ResNet-18
// really training on the CPU at batch 16 needs far more anonymous memory
// than 384MiB, while torch imports in less) and one that crashes (an
// unknown model in the script) are recorded as such, and nothing of the
// jobs is left running.
func TestPyTorchE2E_FailuresRecorded(t *testing.T) {
	forEachPyRunner(t, func(t *testing.T, r pyRunner) {
		py := torchPython(t)
		data := genPyData(t, py, "image", "2MiB")
		name := e2eJobName(t)
		script := []string{"--", r.py, filepath.Join(r.script, "testdata", "imagenet_ref.py"), "{data}", "-j", "{workers}", "-b", "{batch}"}
		args := append(append(append([]string{}, r.flags...), quickPoint...),
			"--strategy", "grid", "--cpus", "1", "--mem-limits", "384MiB", "-b", "16", "--data", data, "--job-name", name)
		run := runProfileCmd(t, nil, append(append(args, script...), "-a", "resnet18")...)
		p, err := sensitivity.Load(run.out)
		if err != nil {
			t.Fatalf("load profile: %v\n%s", err, run.stderr)
		}
		if oom := p.Cell(1, 384<<20); oom == nil || oom.Failure == nil || oom.Failure.Class != sensitivity.FailOOMKilled {
			t.Errorf("384MiB cell %+v, want oom_killed\n%s", oom, run.stderr)
		}
		args = append(append(append([]string{}, r.flags...), quickPoint...),
			"--strategy", "synergy", "--cpus", "1", "--mem-limits", "1GiB", "-b", "8", "--data", data, "--job-name", name)
		run = runProfileCmd(t, nil, append(append(args, script...), "-a", "no_such_arch")...)
		if run.exitCode == 0 {
			t.Errorf("every point failed, yet synergy profile exited 0")
		}
		if p, err = sensitivity.Load(run.out); err != nil {
			t.Fatalf("load profile: %v\n%s", err, run.stderr)
		}
		if crash := p.Cell(1, 0); crash == nil || crash.Failure == nil || crash.Failure.Class != sensitivity.FailCrashed || crash.Failure.ExitCode != 1 {
			t.Errorf("unlimited cell %+v, want crashed with the script's exit status 1\n%s", crash, run.stderr)
		}
		if r.name == "docker" {
			assertNoProfileContainers(t, name)
			return
		}
		assertNoProcess(t, data) // this test's own dataset: another test run's jobs may be running
	})
}

// assertNoProcess fails when a process whose command line holds s runs.
func assertNoProcess(t *testing.T, s string) {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), s) && !strings.Contains(string(b), "go test") {
			t.Errorf("process left behind: %s: %q", f, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}
