package profiler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/models/pytorch"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

func TestParseTemplate(t *testing.T) {
	vals := map[string]string{"workers": "3", "batch": "64", "data": "/ds", "iterations": "405"}
	for _, tc := range []struct {
		argv    []string
		want    []string // nil: no placeholder
		wantErr string
	}{
		{argv: []string{"python3", "main.py", "--lr", "0.1"}},
		{argv: []string{"python3", "main.py", "{data}", "-j", "{workers}", "-b", "{batch}"},
			want: []string{"python3", "main.py", "/ds", "-j", "3", "-b", "64"}},
		{argv: []string{"t", "--data={data}/train", "--n={iterations}x{batch}"},
			want: []string{"t", "--data=/ds/train", "--n=405x64"}},
		{argv: []string{"t", "{{data}}", "-j", "{workers}"}, want: []string{"t", "{data}", "-j", "3"}},
		{argv: []string{"t", "{epochs}"}, wantErr: `command argument 2 "{epochs}": unknown placeholder {epochs}`},
		{argv: []string{"t", "-j", "{workers"}, wantErr: "is never closed"},
		{argv: []string{"t", "a}b"}, wantErr: "a lone }"},
		{argv: []string{"t", ""}},
	} {
		tm, err := parseTemplate(tc.argv)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.argv, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.argv, err)
			continue
		}
		if tc.want == nil {
			if tm.has() {
				t.Errorf("%q: placeholders %v found, want none", tc.argv, tm.used)
			}
			if got := tm.expand(vals); !slices.Equal(got, tc.argv) {
				t.Errorf("%q: expanded to %q, want it unchanged", tc.argv, got)
			}
			continue
		}
		if got := tm.expand(vals); !slices.Equal(got, tc.want) {
			t.Errorf("%q: expanded to %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestJobNameFor(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"/usr/bin/python3", "models/pytorch/train_imagenet.py", "--arch", "resnet18"}, "train_imagenet"},
		{[]string{"python3", "-u", "-X", "dev", "main.py"}, "main"},
		{[]string{"python3.11", "-m", "torch.distributed.run", "x.py"}, "torch.distributed.run"},
		{[]string{"python", "-mtrain"}, "train"},
		{[]string{"bin/synthtrain", "--preset", "audio"}, "synthtrain"},
		{[]string{"python3", "-c", "print(1)"}, "python3"},
		{[]string{"/opt/conda/bin/python", "train.py"}, "train"},
		{[]string{"pythonic", "train.py"}, "pythonic"},
	} {
		if got := JobNameFor(tc.cmd); got != tc.want {
			t.Errorf("JobNameFor(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// jobRecorder wraps a runner and keeps every job it starts.
type jobRecorder struct {
	runner.Runner
	name string // "" : the wrapped runner's
	mu   sync.Mutex
	jobs []runner.Job
}

func (r *jobRecorder) Name() string {
	if r.name != "" {
		return r.name
	}
	return r.Runner.Name()
}

func (r *jobRecorder) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	r.mu.Lock()
	r.jobs = append(r.jobs, job)
	r.mu.Unlock()
	return r.Runner.Start(ctx, job)
}

func envOf(job runner.Job) map[string]string {
	m := map[string]string{}
	for _, kv := range job.Env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v // the last one wins, as in exec
	}
	return m
}

// A template is expanded per point with nothing appended; every point's
// thread counts follow its cpuset whatever the caller's environment says,
// and --env passes the user's variables (which may set them on purpose).
func TestRun_TemplateAndThreadEnv(t *testing.T) {
	t.Setenv("OMP_NUM_THREADS", "7")
	rec := &jobRecorder{Runner: &fakeRunner{rate: trueRate}}
	cfg := baseConfig(t, nil)
	cfg.Runner = rec
	cfg.Command = []string{"/bin/train", "{data}/train", "--max-iterations", "{iterations}", "--batch", "{batch}", "-j", "{workers}"}
	cfg.CPUs = []float64{0.5, 2.5}
	cfg.MemLimits = nil
	cfg.StallBreakdown = true // a template cannot ask for synthetic data: no step-only run
	cfg.Env = []string{"FOO=bar", "MKL_NUM_THREADS=9"}
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.StepOnly != nil {
		t.Errorf("a step-only run was made from a template")
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "no step-only run") }) {
		t.Errorf("warnings %q do not say why there is no step-only run", p.Warnings)
	}
	if len(rec.jobs) != 2 {
		t.Fatalf("%d jobs started, want 2", len(rec.jobs))
	}
	// Each launch checkpoints into a directory of its own in its metrics
	// directory and never requeues: a preemptible job under Slurm would
	// otherwise resume where another launch stopped, and requeue the Slurm
	// job synergy runs in.
	ckpts := map[string]bool{}
	for _, job := range rec.jobs {
		env := envOf(job)
		dir := env[jobcontract.EnvCheckpointDir]
		if dir == "" || filepath.Dir(dir) != job.MetricsDir || ckpts[dir] || env[jobcontract.EnvRequeue] != "none" {
			t.Errorf("cpus=%g: %s=%q %s=%q, want a directory of the launch's own in %s and none",
				job.Limits.CPUs, jobcontract.EnvCheckpointDir, dir, jobcontract.EnvRequeue, env[jobcontract.EnvRequeue], job.MetricsDir)
		}
		ckpts[dir] = true
	}
	for _, job := range rec.jobs {
		cores := map[float64]string{0.5: "1", 2.5: "3"}[job.Limits.CPUs]
		want := []string{"/bin/train", cfg.DataDir + "/train", "--max-iterations", "", "--batch", "4", "-j", cores}
		got := slices.Clone(job.Argv)
		if len(got) == len(want) {
			got[3] = "" // the budget is checked below
		}
		if !slices.Equal(got, want) {
			t.Errorf("cpus=%g: argv %q, want %q with the budget at index 3", job.Limits.CPUs, job.Argv, want)
		}
		// A launch's cap covers every point it may serve, each at least
		// warm-up 5 + cap 300.
		if n, err := strconv.Atoi(job.Argv[3]); err != nil || n < 305 {
			t.Errorf("cpus=%g: {iterations} = %s, want at least 305", job.Limits.CPUs, job.Argv[3])
		}
		env := envOf(job)
		if env["OMP_NUM_THREADS"] != cores || env["OPENBLAS_NUM_THREADS"] != cores {
			t.Errorf("cpus=%g: OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s, want %s (ceil of the point's cpus)",
				job.Limits.CPUs, env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"], cores)
		}
		if env["MKL_NUM_THREADS"] != "9" || env["FOO"] != "bar" {
			t.Errorf("cpus=%g: --env lost: MKL_NUM_THREADS=%s FOO=%s", job.Limits.CPUs, env["MKL_NUM_THREADS"], env["FOO"])
		}
		if _, ok := env["PYTHONPATH"]; ok || job.ProbeDir != "" {
			t.Errorf("cpus=%g: the probe was injected into a job that is not Python", job.Limits.CPUs)
		}
	}
}

func TestConfig_RefusesBadTemplatesAndEmulation(t *testing.T) {
	for _, tc := range []struct {
		mod     func(*testConfig)
		wantErr string
	}{
		{func(c *testConfig) { c.Command = []string{"python3", "x.py", "-j", "{worker}"} }, "unknown placeholder {worker}"},
		{func(c *testConfig) { c.Command = []string{"t", "{data}"}; c.DataDir = "" }, "{data} needs a dataset directory"},
		{func(c *testConfig) { c.Command = []string{"python3", "x.py"}; c.EmulateGPU = "v100" }, "--model"},
		{func(c *testConfig) { c.Command = []string{"python3", "x.py"}; c.Model = "resnet18" }, "only with --emulate-gpu"},
		{func(c *testConfig) {
			c.Command = []string{"python3", "x.py"}
			c.EmulateGPU, c.Model, c.EmulateStep = "v100", "resnet18", time.Second
		}, "one or the other"},
		{func(c *testConfig) { c.Command = []string{"/bin/train"}; c.EmulateStep = time.Second }, "needs --probe torch"},
		{func(c *testConfig) { c.Command = []string{"python3", "x.py"}; c.Probe = "tf" }, `probe: "tf"`},
	} {
		cfg := baseConfig(t, &fakeRunner{rate: trueRate})
		tc.mod(&cfg)
		cfg.withDefaults()
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: Validate() = %v, want an error containing %q", cfg.Command, err, tc.wantErr)
		}
	}
}

// A Python job gets the probe: its directory (the probe's files written
// there) first on PYTHONPATH before the job's own, the report path, the
// iteration cap, the worker override when the template gives no
// {workers}, and the loader-only mode; all of it gone after the run.
func TestRun_ProbeEnv(t *testing.T) {
	t.Setenv("PYTHONPATH", "/caller/lib")
	// The local runner's jobs inherit the caller's environment, so the
	// probe chains the caller's PYTHONPATH.
	rec := &jobRecorder{Runner: &fakeRunner{rate: trueRate}, name: "local"}
	cfg := baseConfig(t, nil)
	cfg.Runner = rec
	cfg.Command = []string{"python3", "ref.py", "{data}", "-b", "{batch}", "--max-iterations", "{iterations}", "--batch", "{batch}"}
	cfg.CPUs, cfg.MemLimits = []float64{2}, nil
	cfg.EmulateGPU, cfg.Model = "v100", "resnet18"
	var probeFiles []string
	fr := rec.Runner.(*fakeRunner)
	fr.onStart = func(int) {
		job := rec.jobs[len(rec.jobs)-1]
		entries, _ := os.ReadDir(job.ProbeDir)
		for _, e := range entries {
			probeFiles = append(probeFiles, e.Name())
		}
	}
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(rec.jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(rec.jobs))
	}
	job := rec.jobs[0]
	env := envOf(job)
	if job.ProbeDir == "" || env["PYTHONPATH"] != job.ProbeDir+":/caller/lib" {
		t.Errorf("PYTHONPATH=%q, ProbeDir %q: want the probe first, then the caller's", env["PYTHONPATH"], job.ProbeDir)
	}
	if !slices.Contains(probeFiles, "sitecustomize.py") || !slices.Contains(probeFiles, "synergy_probe.py") {
		t.Errorf("probe directory held %q while the job ran", probeFiles)
	}
	if _, err := os.Stat(job.ProbeDir); !os.IsNotExist(err) {
		t.Errorf("probe directory %s left behind (%v)", job.ProbeDir, err)
	}
	want := map[string]string{
		"SYNERGY_PROBE_WORKERS":     "2",
		"SYNERGY_PROBE_EMULATE_GPU": "v100", "SYNERGY_PROBE_MODEL": "resnet18",
		"SYNERGY_PROBE_REPORT": filepath.Join(job.MetricsDir, "probe-report.json"),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if n, err := strconv.Atoi(env["SYNERGY_PROBE_MAX_ITERATIONS"]); err != nil || n < 305 {
		t.Errorf("SYNERGY_PROBE_MAX_ITERATIONS=%q, want the launch's cap, at least warm-up 5 + cap 300", env["SYNERGY_PROBE_MAX_ITERATIONS"])
	}
	if _, ok := env["SYNERGY_PROBE_STEP_S"]; ok {
		t.Errorf("SYNERGY_PROBE_STEP_S set beside the table's step")
	}
}

// A command without placeholders still writes a literal brace as {{ or }}
// (the parser refuses a lone one), and the job gets the brace, then the
// contract's flags.
func TestRun_NoTemplateUnescapesBraces(t *testing.T) {
	rec := &jobRecorder{Runner: &fakeRunner{rate: trueRate}}
	cfg := baseConfig(t, nil)
	cfg.Runner = rec
	cfg.Command = []string{"/bin/sh", "-c", `printf '{{"iter":%d}}\n' 1`, "sh"}
	cfg.CPUs = []float64{1}
	cfg.MemLimits = nil
	cfg.StallBreakdown = false
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(rec.jobs) == 0 {
		t.Fatal("no job started")
	}
	argv := rec.jobs[0].Argv
	if len(argv) < 5 || argv[2] != `printf '{"iter":%d}\n' 1` || !slices.Contains(argv[4:], "--batch") {
		t.Errorf("argv %q: want the script with single braces, then the contract's flags", argv)
	}
}

// An unmodified Python script (a template) cannot be asked for synthetic
// data, yet gets its step-only run: the probe replays the first batch
// (SYNERGY_PROBE_REPLAY=1 at that run only), and the profile says so.
func TestRun_TemplateStepOnlyThroughTheProbesReplay(t *testing.T) {
	rec := &jobRecorder{Runner: &fakeRunner{rate: trueRate}}
	cfg := baseConfig(t, nil)
	cfg.Runner = rec
	cfg.Command = []string{"python3", "main.py", "{data}", "--max-iterations", "{iterations}", "--batch", "{batch}"}
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = nil
	cfg.StallBreakdown = true
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.StepOnly == nil || p.StepOnly.Source != sensitivity.StepOnlyProbeReplay || p.StepOnly.SamplesPerS <= 0 {
		t.Fatalf("step-only = %+v, want one measured through the probe's replay", p.StepOnly)
	}
	if len(rec.jobs) < 3 {
		t.Fatalf("%d jobs, want the step-only run and two points", len(rec.jobs))
	}
	// The fake runner's job does not answer the control channel: the
	// step-only run is a launch of its own, after the first point's, at
	// the most CPUs.
	replays := 0
	for i, job := range rec.jobs {
		replay := envOf(job)[pytorch.ProbeEnvReplay] == "1"
		if replay {
			replays++
			if i != 1 || job.Limits.CPUs != 2 {
				t.Errorf("job %d (%s) replays, want the second launch at cpus=2", i, job.Limits)
			}
		}
		if slices.Contains(job.Argv, "--synthetic-data") {
			t.Errorf("job %d: a template was given --synthetic-data: %q", i, job.Argv)
		}
	}
	if replays != 1 {
		t.Errorf("%d launches replayed, want the step-only run's one", replays)
	}
}

// localNamed is a runner named "local" (the job's directory and the
// command's relative paths are the local runner's).
type localNamed struct{ fakeRunner }

func (*localNamed) Name() string { return "local" }

func TestJobDir_InsideTheRunWithTheCallersEntries(t *testing.T) {
	caller := t.TempDir()
	t.Chdir(caller)
	if err := os.WriteFile("main.py", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	s := &launcher{cfg: &Config{Command: []string{"python3", "main.py", "--out", "ckpt"}}, deps: &Deps{Runner: &localNamed{}}, workDir: work}
	if err := s.setupJobDir(); err != nil {
		t.Fatal(err)
	}
	if s.jobDir != filepath.Join(work, "job") {
		t.Errorf("job dir %q, want inside the run's work directory %q", s.jobDir, work)
	}
	// The caller's entries are found from the job's directory by the same
	// relative names (main.py, conf/a.yaml); a file the job makes there is
	// not the caller's.
	if err := os.Mkdir("conf", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("conf", "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.jobDir); err != nil {
		t.Fatal(err)
	}
	if err := s.setupJobDir(); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"main.py", "conf/a.yaml"} {
		if _, err := os.Stat(filepath.Join(s.jobDir, rel)); err != nil {
			t.Errorf("%s not found from the job's directory: %v", rel, err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.jobDir, "model.pt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(caller, "model.pt")); err == nil {
		t.Error("a file the job wrote in its directory landed in the caller's")
	}

	// A module keeps the caller's directory; a chosen one is taken.
	s = &launcher{cfg: &Config{Command: []string{"python3", "-m", "pkg.train"}}, deps: &Deps{Runner: &localNamed{}}, workDir: work}
	if err := s.setupJobDir(); err != nil || s.jobDir != s.callerDir {
		t.Errorf("python -m: job dir %q (%v), want the caller's %q", s.jobDir, err, s.callerDir)
	}
	own := t.TempDir()
	s = &launcher{cfg: &Config{Command: []string{"python3", "main.py"}, JobSetup: JobSetup{JobDir: own}}, deps: &Deps{Runner: &localNamed{}}, workDir: work}
	if err := s.setupJobDir(); err != nil || s.jobDir != own {
		t.Errorf("--job-dir: %q (%v), want %q", s.jobDir, err, own)
	}
	s.cfg.JobDir = filepath.Join(own, "missing")
	if err := s.setupJobDir(); err == nil || !strings.Contains(err.Error(), "job-dir") {
		t.Errorf("a missing --job-dir: err = %v, want refused naming it", err)
	}
}
