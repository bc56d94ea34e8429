package profiler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// fakeRunner "runs" a job by appending a synthetic metrics stream whose
// timestamps advance by samples/rate, so a sweep's logic is exercised
// without real time passing.
type fakeRunner struct {
	// rate returns samples/s at a point; 0 means write no metrics.
	rate func(l runner.Limits) float64
	// fail returns how a point ends early: "" (runs), "crash", "oom".
	fail func(l runner.Limits) string
	// garbage, when set and not "", is the line a point writes instead of
	// every metrics line.
	garbage func(l runner.Limits) string
	// onStart is called with the number of jobs started so far.
	onStart func(n int)
	// epochIters is the iterations in one of the job's epochs (10 when 0:
	// one per file of baseConfig's dataset at its batch).
	epochIters int
	noise      float64
	// inPass, when set, scales the rate at a point by where in its epoch
	// an iteration falls (0 at the epoch's first iteration, towards 1).
	inPass func(l runner.Limits, frac float64) float64
	// cgroup, when set, is the directory every handle names as its cgroup
	// (CgroupPaths "unified").
	cgroup string
	// anon, when set, is the job's anonymous memory at a point (its
	// cgroup's counters, final and live).
	anon func(l runner.Limits) int64

	mu         sync.Mutex
	started    int
	argvs      [][]string
	statsCalls int
}

var _ runner.Runner = (*fakeRunner)(nil)

func (f *fakeRunner) Name() string { return "fake" }

func (f *fakeRunner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	f.mu.Lock()
	f.started++
	n := f.started
	f.argvs = append(f.argvs, job.Argv)
	f.mu.Unlock()
	if f.onStart != nil {
		f.onStart(n)
	}
	path, maxIter, batch, _ := contractOf(job)
	epochIters := f.epochIters
	if epochIters == 0 {
		epochIters = 10
	}
	h := &fakeHandle{stop: make(chan struct{}), done: make(chan struct{}), runner: f, limits: job.Limits}
	go func() {
		defer close(h.done)
		mode := ""
		if f.fail != nil {
			mode = f.fail(job.Limits)
		}
		rate := f.rate(job.Limits)
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		ts := 1.7e9
		out, _ := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		defer out.Close()
		for i := 0; i < maxIter; i++ {
			if mode != "" && i == 3 {
				h.res = runner.Result{ExitCode: 1}
				if mode == "oom" {
					h.res = runner.Result{ExitCode: -1, Signal: "killed", OOMKilled: true}
				}
				return
			}
			select {
			case <-h.stop:
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			case <-ctx.Done():
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			default:
			}
			if f.garbage != nil && f.garbage(job.Limits) != "" {
				out.WriteString(f.garbage(job.Limits) + "\n")
			} else if rate > 0 {
				r := rate
				if f.inPass != nil {
					r *= f.inPass(job.Limits, float64(i%epochIters)/float64(epochIters))
				}
				ts += float64(batch) / r * (1 + f.noise*(rng.Float64()-0.5))
				line, _ := json.Marshal(map[string]any{"iter": i, "samples": batch, "data_wait_s": 0.001, "step_s": 0.01, "ts": ts, "epoch": i / epochIters, "emulated": true, "emulated_gpu": "v100"})
				out.Write(append(line, '\n'))
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return h, nil
}

// contractOf reads what a fake job needs of the profiler's contract: its
// metrics file, and its --max-iterations, --batch and --workers (-1 when
// not given).
func contractOf(job runner.Job) (metrics string, maxIter, batch, workers int) {
	for _, e := range job.Env {
		if v, ok := strings.CutPrefix(e, jobcontract.EnvMetricsFile+"="); ok {
			metrics = v
		}
	}
	workers = -1
	for i, a := range job.Argv[:max(len(job.Argv)-1, 0)] {
		switch a {
		case "--max-iterations":
			fmt.Sscan(job.Argv[i+1], &maxIter)
		case "--batch":
			fmt.Sscan(job.Argv[i+1], &batch)
		case "--workers":
			fmt.Sscan(job.Argv[i+1], &workers)
		}
	}
	return metrics, maxIter, batch, workers
}

type fakeHandle struct {
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	res      runner.Result
	runner   *fakeRunner
	limits   runner.Limits
}

func (h *fakeHandle) Stats() (runner.Stats, error) {
	h.runner.mu.Lock()
	h.runner.statsCalls++
	h.runner.mu.Unlock()
	return h.memStats(), nil
}

func (h *fakeHandle) memStats() runner.Stats {
	if h.runner.anon == nil {
		return runner.Stats{}
	}
	return runner.Stats{MemAnonBytes: h.runner.anon(h.limits), Has: runner.StatMemAnon}
}

func (h *fakeHandle) CgroupPaths() map[string]string {
	if h.runner.cgroup == "" {
		return nil
	}
	return map[string]string{"unified": h.runner.cgroup}
}
func (h *fakeHandle) Stop() error { h.stopOnce.Do(func() { close(h.stop) }); return nil }
func (h *fakeHandle) Wait() (runner.Result, error) {
	<-h.done
	res := h.res
	res.Final = h.memStats()
	return res, nil
}

// trueRate is the job the fake runs: CPU-bound at 100 samples/s per core up
// to 2 cores, fetch-bound at 120 samples/s under 100 MiB.
func trueRate(l runner.Limits) float64 {
	r := 100 * math.Min(l.CPUs, 2)
	if l.MemLimitBytes > 0 && l.MemLimitBytes < 100<<20 {
		r = math.Min(r, 120)
	}
	return r
}

func baseConfig(t *testing.T, fr *fakeRunner) testConfig {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ { // 40 samples: 10 iterations of batch 4 per epoch
		if err := os.WriteFile(filepath.Join(data, fmt.Sprintf("s%02d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return testConfig{Config: Config{
		Command:       []string{"/bin/train", "--lr", "0.1"},
		Batch:         4,
		MaxIterations: 300,
		DataDir:       data,
		CPUs:          []float64{1, 2, 3},
		MemLimits:     []int64{50 << 20, 1 << 30},
		Out:           filepath.Join(dir, "profile.json"),
		Strategy:      StrategyAxes,
		Poll:          2 * time.Millisecond,
	}, Deps: Deps{
		Runner: fr,
		Host:   sensitivity.HostInfo{DRAMBytes: 4 << 30, LogicalCPUs: 4},
	}}
}

// testConfig is a test's settings and dependencies together: its fields
// are both's, as a test sets them.
type testConfig struct {
	Config
	Deps
}

// run runs the sweep a test set up.
func run(ctx context.Context, c testConfig) (*sensitivity.Profile, error) {
	return Run(ctx, c.Config, c.Deps)
}

func TestRun_MeasuresAxesAndPredictsTheRest(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, noise: 0.05}
	cfg := baseConfig(t, fr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 3 CPU points + 2 memory points at the best CPU count (2: 3 cores is
	// no faster, so the fewest cores within the interval wins).
	if p.Cost.Points != 5 {
		t.Fatalf("points = %d, want 5", p.Cost.Points)
	}
	want := map[[2]float64]bool{{1, 0}: true, {2, 0}: true, {3, 0}: true, {2, 50 << 20}: true, {2, 1 << 30}: true}
	for _, c := range p.Cells {
		k := [2]float64{c.CPUs, float64(c.MemLimitBytes)}
		if c.Measured != want[k] {
			t.Errorf("cell %v measured=%v, want %v", k, c.Measured, want[k])
		}
		truth := trueRate(runner.Limits{CPUs: c.CPUs, MemLimitBytes: c.MemLimitBytes})
		// measured cells: within the 2% target (plus the noise's own slack);
		// predicted ones follow min(P(c), M(m)) exactly on this job.
		if rel := math.Abs(c.SamplesPerS-truth) / truth; rel > 0.03 {
			t.Errorf("cell %v: %.1f samples/s, truth %.1f (%.1f%% off)", k, c.SamplesPerS, truth, 100*rel)
		}
		if c.Measured {
			if !c.Stats.Converged || c.Stats.StopReason != sensitivity.PointStopConverged {
				t.Errorf("cell %v: converged=%v stop=%q", k, c.Stats.Converged, c.Stats.StopReason)
			}
			if c.SamplesPerSCI95/c.SamplesPerS > 0.02 {
				t.Errorf("cell %v: CI %.3f above target", k, c.SamplesPerSCI95/c.SamplesPerS)
			}
		}
	}
	if len(p.Cells) != 3*3 {
		t.Fatalf("cells = %d, want the full 3×3 grid", len(p.Cells))
	}
	if p.GPU.Mode != sensitivity.GPUModeEmulated {
		t.Errorf("gpu.mode = %q, want emulated (the stream said so)", p.GPU.Mode)
	}
	if p.GPU.Type != "v100" {
		t.Errorf("gpu.type = %q, want v100 (the stream's emulated_gpu)", p.GPU.Type)
	}
	// Cold points measure from the second pass: the memory cell's warm-up
	// covers the first epoch (10 iterations here).
	if c := p.Cell(2, 50<<20); c.Stats.WarmupIterations < 10 || !c.Stats.ColdStart {
		t.Errorf("memory point warm-up = %d iterations, cold=%v; want >= one epoch (10), cold", c.Stats.WarmupIterations, c.Stats.ColdStart)
	}
	// What is on disk is what was returned, and it validates.
	back, err := sensitivity.Load(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Cells) != len(p.Cells) {
		t.Errorf("saved %d cells, returned %d", len(back.Cells), len(p.Cells))
	}
	// The contract flags come last, with workers = ceil(cpus/gpus).
	argv := fr.argvs[1]
	tailArgs := strings.Join(argv[len(argv)-8:], " ")
	if !strings.HasPrefix(tailArgs, "--batch 4 --workers 2 --max-iterations ") || !strings.HasSuffix(tailArgs, "--data "+cfg.DataDir) {
		t.Errorf("contract flags = %q", tailArgs)
	}
}

func TestRun_RecordsFailuresAndGoesOn(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, fail: func(l runner.Limits) string {
		switch {
		case l.CPUs == 1:
			return "crash"
		case l.MemLimitBytes == 50<<20:
			return "oom"
		}
		return ""
	}}
	cfg := baseConfig(t, fr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Cell(1, 0); c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailCrashed || c.Failure.ExitCode != 1 {
		t.Fatalf("cpus=1 cell = %+v, want a crashed failure with exit code 1", c)
	}
	if c := p.Cell(2, 50<<20); c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailOOMKilled {
		t.Fatalf("mem=50MiB cell = %+v, want oom_killed", c)
	}
	if c := p.Cell(3, 50<<20); c == nil || c.Measured || c.SamplesPerS != 0 {
		t.Errorf("a limit that OOMs predicts 0 for other CPU counts, got %+v", c)
	}
	if c := p.Cell(2, 1<<30); c == nil || c.Failure != nil || c.SamplesPerS < 190 {
		t.Errorf("the sweep went on after failures: mem=1GiB cell = %+v", c)
	}
}

// A job whose pass over the data is far longer than one sample per file
// (token shards: many windows per file) ends its limited points inside
// its first pass; the failure says so and names the flag to raise, while
// its unlimited points are measured.
func TestRun_ColdPointInsideTheFirstPassNamesTheEpoch(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, epochIters: 1 << 20}
	cfg := baseConfig(t, fr)
	cfg.MaxIterations = 40
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c *sensitivity.Cell
	for i := range p.Cells {
		if p.Cells[i].MemLimitBytes == 50<<20 && p.Cells[i].Failure != nil {
			c = &p.Cells[i]
		}
	}
	if c == nil || c.Failure.Class != sensitivity.FailNoProgress {
		t.Fatalf("limited cell = %+v, want a no_progress failure", c)
	}
	for _, want := range []string{"first pass over the data (epoch 0)", "one pass of 10 iterations (40 files at batch 4)", "raise --max-iterations above one epoch"} {
		if !strings.Contains(c.Failure.Message, want) {
			t.Errorf("failure %q does not say %q", c.Failure.Message, want)
		}
	}
	if c := p.Cell(1, 0); c == nil || c.Failure != nil || !c.Measured {
		t.Errorf("unlimited cell = %+v, want measured", c)
	}
}

func TestRun_InterruptSavesAndResumeFinishes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fr := &fakeRunner{rate: trueRate}
	fr.onStart = func(n int) {
		if n == 3 { // cancel during the third point
			cancel()
		}
	}
	cfg := baseConfig(t, fr)
	_, err := run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	partial, err := sensitivity.Load(cfg.Out)
	if err != nil {
		t.Fatalf("partial profile does not load: %v", err)
	}
	if len(partial.MeasuredOK()) != 2 {
		t.Fatalf("partial profile has %d measured cells, want the 2 finished before Ctrl-C", len(partial.MeasuredOK()))
	}
	// Without Resume an existing profile is never overwritten.
	fr2 := &fakeRunner{rate: trueRate}
	cfg.Runner = fr2
	if _, err := run(context.Background(), cfg); !errors.Is(err, ErrProfileExists) || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("rerun without resume: err = %v, want ErrProfileExists with a hint to resume", err)
	}
	cfg.Resume = true
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fr2.started != 3 {
		t.Errorf("resume started %d jobs, want the 3 unmeasured points", fr2.started)
	}
	if len(p.MeasuredOK()) != 5 || p.Cost.Points != 5 {
		t.Errorf("resumed profile: %d measured cells, %d points; want 5 and 5", len(p.MeasuredOK()), p.Cost.Points)
	}
}

func TestRun_ResumeRefusesAnotherCommand(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1}
	cfg.MemLimits = nil
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Resume = true
	cfg.Command = []string{"/bin/other"}
	if _, err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("err = %v, want a resume mismatch", err)
	}
}

func TestRun_NoMetricsStreamUsesWallClock(t *testing.T) {
	// The command passes the job its iteration count ({iterations}) and the
	// job runs it to its end: the iterations it ran are known.
	fr := &fakeRunner{rate: func(runner.Limits) float64 { return 0 }}
	cfg := baseConfig(t, fr)
	cfg.Command = []string{"/bin/train", "--max-iterations", "{iterations}", "--batch", "{batch}"}
	cfg.CPUs = []float64{1}
	cfg.MemLimits = nil
	cfg.MaxIterations = 30
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 0)
	if c.Failure != nil || c.Stats.MetricsSource != sensitivity.MetricsWall || c.SamplesPerS <= 0 {
		t.Fatalf("cell = %+v stats=%+v, want a wall-clock measurement", c, c.Stats)
	}
	// iterations × batch / wall seconds
	want := float64(c.Stats.Iterations*cfg.Batch) / c.Stats.WallSeconds
	if math.Abs(c.SamplesPerS-want)/want > 1e-9 {
		t.Errorf("samples/s = %v, want %v", c.SamplesPerS, want)
	}
	// One number has no interval: it is recorded as unknown (±100%), never ±0.
	if c.SamplesPerSCI95 != c.SamplesPerS {
		t.Errorf("ci95 = %v, want the unknown interval %v (the figure itself)", c.SamplesPerSCI95, c.SamplesPerS)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "wrote no metrics stream") }) {
		t.Errorf("warnings = %q, want the wall-time fallback named", p.Warnings)
	}
}

func TestRun_NoStreamUnknownIterationsRefused(t *testing.T) {
	// Issue 44: a job that writes no stream, given its cap only as an
	// appended flag (or stopped before its end), ran an unknown number of
	// iterations: its cells are refused with the ways to a stream, never
	// measured from the planned cap, and it is launched once.
	fr := &fakeRunner{rate: func(runner.Limits) float64 { return 0 }}
	cfg := baseConfig(t, fr)
	cfg.CPUs = []float64{1, 2}
	cfg.MemLimits = nil
	cfg.MaxIterations = 30
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, cpus := range cfg.CPUs {
		c := p.Cell(cpus, 0)
		if c == nil || c.Failure == nil || c.Failure.Class != sensitivity.FailNoProgress || c.SamplesPerS != 0 {
			t.Fatalf("cpus=%g: cell = %+v, want refused (no_progress) with no figure", cpus, c)
		}
		for _, want := range []string{"iterations it ran are not known", "--progress-regex", "{iterations}", "SynergyMetrics"} {
			if !strings.Contains(c.Failure.Message, want) {
				t.Errorf("cpus=%g: message %q does not say %q", cpus, c.Failure.Message, want)
			}
		}
	}
	if !strings.HasPrefix(p.Cell(2, 0).Failure.Message, "not launched: ") {
		t.Errorf("second cell: %q, want not launched", p.Cell(2, 0).Failure.Message)
	}
	if fr.started != 1 || p.Cost.Launches != 1 {
		t.Errorf("launches = %d (runner %d), want 1: every point would be refused alike", p.Cost.Launches, fr.started)
	}
}

func TestRun_ProgressRegexMeasuresLogLines(t *testing.T) {
	// A job with no stream whose log says how far it got: measured from
	// those lines, the iterations they count over the time they took.
	var lr logRunner
	cfg := baseConfig(t, nil)
	cfg.Deps.Runner = &lr
	cfg.CPUs = []float64{1}
	cfg.MemLimits = nil
	cfg.MaxIterations = 30
	cfg.MinIterations = 5
	cfg.ProgressRegex = `\| +([0-9]+)/ *[0-9]+ batches`
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 0)
	if c == nil || c.Failure != nil || c.Stats.MetricsSource != sensitivity.MetricsLog {
		t.Fatalf("cell = %+v, want measured from log lines", c)
	}
	// 10 iterations of batch 4 every 20 ms: 2000 samples/s; the sleeps
	// only lengthen the interval, so the figure is at most that.
	if c.SamplesPerS <= 200 || c.SamplesPerS > 2000*1.05 {
		t.Errorf("samples/s = %v, want about 2000 (at most)", c.SamplesPerS)
	}
}

func TestProgressScanner(t *testing.T) {
	re, err := compileProgress(`\| +([0-9]+)/ *[0-9]+ batches`)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(100, 0)
	ps := newProgressScanner(re, 20, func() time.Time { now = now.Add(time.Second); return now })
	for _, chunk := range []string{"| epoch 1 |   200/ 2983 batches | lr 20\n| epoch 1 |   4", "00/ 2983 batches |\nnoise\n",
		"| epoch 2 |   200/ 2983 batches |\n", "progress\r| epoch 2 |   300/ 2983 batches\n"} {
		ps.Write([]byte(chunk))
	}
	got := ps.take()
	want := []struct{ samples, epoch int }{{200 * 20, 0}, {200 * 20, 0}, {200 * 20, 1}, {100 * 20, 1}}
	if len(got) != len(want) {
		t.Fatalf("got %d iterations %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Samples != w.samples || *got[i].Epoch != w.epoch {
			t.Errorf("line %d: samples %d epoch %d, want %d %d", i, got[i].Samples, *got[i].Epoch, w.samples, w.epoch)
		}
	}
	if len(ps.take()) != 0 {
		t.Error("take twice returned the lines again")
	}
	if _, err := compileProgress(`(a)(b)`); err == nil || !strings.Contains(err.Error(), "progress-regex") {
		t.Errorf("two groups: err = %v, want refused naming the flag", err)
	}
	if _, err := compileProgress(`(`); err == nil || !strings.Contains(err.Error(), "progress-regex") {
		t.Errorf("bad expression: err = %v, want refused naming the flag", err)
	}
}

func TestRun_CrashAtStartStopsAfterOneLaunch(t *testing.T) {
	// Issue 44: a script that fails before its first iteration (a typo)
	// fails every launch alike: the profile stops after one, and the cell
	// shows the script's error, not the probe's note after it.
	var cr crashRunner
	cfg := baseConfig(t, nil)
	cfg.Deps.Runner = &cr
	_, err := run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "crashed before its first iteration") {
		t.Fatalf("err = %v, want the profile stopped at the crash", err)
	}
	if cr.started != 1 {
		t.Errorf("launches = %d, want 1", cr.started)
	}
	p, lerr := sensitivity.Load(cfg.Out)
	if lerr != nil {
		t.Fatal(lerr)
	}
	var c []sensitivity.Cell
	for _, x := range p.Cells {
		if x.Measured {
			c = append(c, x)
		}
	}
	if len(c) != 1 || c[0].Failure == nil || c[0].Failure.Class != sensitivity.FailCrashed {
		t.Fatalf("cells = %+v, want one crashed", c)
	}
	// Quoted (escaped, bounded) as all job output reaching a terminal is.
	want := jobcontract.QuoteN([]byte(`AttributeError: 'Linear' object has no attribute 'not_a_method' (File "/job/train.py", line 8, in <module>)`), maxQuotedOutput)
	if !strings.Contains(c[0].Failure.Message, want) || strings.Contains(c[0].Failure.Message, "synergy-probe") {
		t.Errorf("message %q, want the script's error %q", c[0].Failure.Message, want)
	}
}

// crashRunner runs a job that fails at once with a Python traceback,
// followed by a note of the probe's.
type crashRunner struct{ fakeRunner }

func (r *crashRunner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	r.started++
	h := &fakeHandle{stop: make(chan struct{}), done: make(chan struct{}), runner: &r.fakeRunner, limits: job.Limits}
	fmt.Fprint(job.Stderr, "loading\nTraceback (most recent call last):\n  File \"/job/train.py\", line 8, in <module>\n    model.not_a_method()\n"+
		"AttributeError: 'Linear' object has no attribute 'not_a_method'\nsynergy-probe: no torch.utils.data.DataLoader was iterated in this run\n")
	h.res = runner.Result{ExitCode: 1}
	close(h.done)
	return h, nil
}

// logRunner runs a job that writes no stream but logs its progress every
// 10 iterations (20 ms), word_language_model's way, until stopped.
type logRunner struct{ fakeRunner }

func (r *logRunner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	h := &fakeHandle{stop: make(chan struct{}), done: make(chan struct{}), runner: &r.fakeRunner, limits: job.Limits}
	go func() {
		defer close(h.done)
		for i := 1; ; i++ {
			select {
			case <-h.stop:
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			case <-ctx.Done():
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			case <-time.After(20 * time.Millisecond):
			}
			fmt.Fprintf(job.Stdout, "| epoch   1 | %5d/ 2983 batches | lr 20.00\n", 10*i)
		}
	}()
	return h, nil
}

func TestRun_MalformedMetricsFailThePoint(t *testing.T) {
	// The 50MiB point's job writes log lines where its metrics go; the
	// others write a good stream.
	garbage := func(l runner.Limits) string {
		if l.MemLimitBytes == 50<<20 {
			return "epoch 0 step 3 loss=0.25"
		}
		return ""
	}
	fr := &fakeRunner{rate: trueRate, garbage: garbage}
	cfg := baseConfig(t, fr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cell(2, 50<<20)
	if c == nil || !c.Measured || c.Failure == nil || c.Failure.Class != sensitivity.FailMalformedMetrics {
		t.Fatalf("50MiB cell = %+v, want a malformed_metrics failure", c)
	}
	if !strings.Contains(c.Failure.Message, `first bad line 1: "epoch 0 step 3 loss=0.25" (not a JSON object`) {
		t.Errorf("failure message %q does not quote the first bad line", c.Failure.Message)
	}
	if c.SamplesPerS != 0 || c.SamplesPerSCI95 != 0 {
		t.Errorf("malformed cell claims %v ±%v samples/s", c.SamplesPerS, c.SamplesPerSCI95)
	}
	if ok := p.Cell(2, 1<<30); ok == nil || ok.Failure != nil || ok.Stats.MetricsSource != sensitivity.MetricsStream {
		t.Errorf("1GiB cell = %+v, want a stream measurement", ok)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("profile with a malformed_metrics cell does not validate: %v", err)
	}

	// Every point garbage: nothing measured, no throughput invented.
	fr = &fakeRunner{rate: trueRate, garbage: func(runner.Limits) string { return "not json" }}
	cfg = baseConfig(t, fr)
	cfg.MemLimits = nil
	p, err = run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.MeasuredOK()); n != 0 {
		t.Errorf("%d cells measured from a garbage stream, want none", n)
	}
	for _, c := range p.Cells {
		if c.Measured && (c.Failure == nil || c.Failure.Class != sensitivity.FailMalformedMetrics) {
			t.Errorf("cell %+v, want malformed_metrics", c)
		}
	}
}

func TestRun_SavesAfterEveryPoint(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	cfg := baseConfig(t, fr)
	rec := &recordingProgress{t: t, path: cfg.Out}
	cfg.Progress = rec
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// At each point's start, the file holds every point finished before it.
	want := []int{-1, 1, 2, 3, 4} // -1: no file yet
	if fmt.Sprint(rec.measuredAtStart) != fmt.Sprint(want) {
		t.Errorf("measured cells on disk at each point's start = %v, want %v", rec.measuredAtStart, want)
	}
}

type recordingProgress struct {
	t               *testing.T
	path            string
	measuredAtStart []int
}

func (r *recordingProgress) PointStart(i int, n string, label string) {
	p, err := sensitivity.Load(r.path)
	if errors.Is(err, os.ErrNotExist) {
		r.measuredAtStart = append(r.measuredAtStart, -1)
		return
	}
	if err != nil {
		r.t.Errorf("profile on disk at point %d: %v", i, err)
		return
	}
	r.measuredAtStart = append(r.measuredAtStart, len(p.MeasuredOK()))
}
func (r *recordingProgress) PointUpdate(string, int, Estimate, time.Duration)  {}
func (r *recordingProgress) PointDone(string, sensitivity.Cell, time.Duration) {}
func (r *recordingProgress) Note(string)                                       {}

func TestConfigValidate_NamesTheSetting(t *testing.T) {
	fr := &fakeRunner{rate: trueRate}
	for _, tc := range []struct {
		name string
		mut  func(*testConfig)
		want string
	}{
		{"no script", func(c *testConfig) { c.Command = nil }, "training script"},
		{"batch", func(c *testConfig) { c.Batch = 0 }, "batch"},
		{"cpus", func(c *testConfig) { c.CPUs = []float64{1, -2} }, "cpus"},
		{"1e-300 cpus", func(c *testConfig) { c.CPUs = []float64{1, 1e-300} }, "cpus: value 2 (1e-300) is not between 0.01"},
		{"1e300 cpus", func(c *testConfig) { c.CPUs = []float64{1e300} }, "cpus: value 1 (1e+300) is not between"},
		{"bidi job name", func(c *testConfig) { c.JobName = "train\u202egnp.exe" }, `job-name: "train\u202egnp.exe" holds a bidirectional-text control (U+202E)`},
		{"7 MB job name", func(c *testConfig) { c.JobName = strings.Repeat("j", 7<<20) }, "job-name: \"jjjj"},
		{"mem", func(c *testConfig) { c.MemLimits = []int64{0} }, "mem-limits"},
		{"max iterations", func(c *testConfig) { c.MaxIterations = 3 }, "max-iterations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(t, fr)
			tc.mut(&cfg)
			cfg.withDefaults()
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
		})
	}
}

// profileOneColdPoint profiles the grid of 1 core by 50MiB (and the
// unlimited cell) with the fake, a cap of maxIter and at least 10
// iterations a point, and returns the profile and its measured limited cell.
func profileOneColdPoint(t *testing.T, fr *fakeRunner, maxIter int) (*sensitivity.Profile, *sensitivity.Cell) {
	t.Helper()
	cfg := baseConfig(t, fr)
	cfg.Strategy = StrategyGrid
	cfg.CPUs = []float64{1}
	cfg.MemLimits = []int64{50 << 20}
	cfg.MaxIterations = maxIter
	cfg.MinIterations = 10
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 50<<20)
	if c == nil || c.Failure != nil || !c.Measured {
		t.Fatalf("limited cell = %+v, want measured", c)
	}
	return p, c
}

// Under a page-cache limit a shuffled pass hits the cache most at its start:
// the fake's limited points run at twice their rate at an epoch's first
// iteration, falling to half at its last. A cold point measures whole
// passes (its iteration cap rounded up to them), so its figure is the
// whole pass's, not the fast start's.
func TestRun_ColdPointMeasuresWholePasses(t *testing.T) {
	shape := func(frac float64) float64 { return 2 - 1.5*frac }
	fr := &fakeRunner{rate: trueRate, inPass: func(l runner.Limits, frac float64) float64 {
		if l.MemLimitBytes > 0 {
			return shape(frac)
		}
		return 1
	}}
	p, c := profileOneColdPoint(t, fr, 25) // 25: not a whole number of 10-iteration passes
	// One pass of 10 iterations of 4 samples at 100·shape samples/s (one
	// core of trueRate).
	var secs float64
	for i := 0; i < 10; i++ {
		secs += 4 / (100 * shape(float64(i)/10))
	}
	want := 40 / secs
	if math.Abs(c.SamplesPerS/want-1) > 0.01 {
		t.Errorf("limited cell %.1f samples/s, want the whole pass's %.1f (the pass's first half alone: %.1f)", c.SamplesPerS, want, 100*shape(0.2))
	}
	if got := c.Stats.MeasuredPasses; got != 3 {
		t.Errorf("measured_passes %g, want 3 (the cap of 25 iterations rounded up to whole 10-iteration passes)", got)
	}
	if w := strings.Join(p.Warnings, "\n"); strings.Contains(w, "of one pass over the data") {
		t.Errorf("a whole-pass point is warned about as a part of one: %s", w)
	}
	if c := p.Cell(1, 0); c == nil || c.Stats.MeasuredPasses != 0 {
		t.Errorf("the warm cell records measured_passes: %+v", c.Stats)
	}
}

// A cold point that ends inside its first measured pass (here the job's
// passes are many times the profiler's guess, so the iterations its
// launch is given end first) keeps what it measured, records the share of
// the pass and says why it reads high.
func TestRun_ColdPointEndedInsideAPassSaysSo(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, epochIters: 150}
	p, c := profileOneColdPoint(t, fr, 20)
	// The launch's cap (about 200 iterations for this 4-cell grid) ends
	// the job in its second 150-iteration epoch: the share is what it ran
	// of it.
	want := float64(c.Stats.Iterations-150) / 150
	if want <= 0 || want >= 1 {
		t.Fatalf("the job ran %d iterations, want it inside its second epoch", c.Stats.Iterations)
	}
	if got := c.Stats.MeasuredPasses; math.Abs(got-want) > 1e-9 {
		t.Errorf("measured_passes %g, want %g, the share of the 30-iteration pass measured", got, want)
	}
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "cpus=1 mem=50MiB: measured") || !strings.Contains(w, "of one pass over the data (stopped: job_exited)") {
		t.Errorf("warnings do not say the point measured part of a pass:\n%s", w)
	}
}

func TestPassBounds(t *testing.T) {
	sw := newSweep(Config{Batch: 4}, Deps{})
	sw.data.datasetFiles = 40 // a pass: 10 iterations
	s := sw.meter
	ep := func(e int) *int { return &e }
	var withEpochs, without []jobcontract.Iteration
	for i := 0; i < 37; i++ {
		withEpochs = append(withEpochs, jobcontract.Iteration{Iter: i, Epoch: ep(i / 12)}) // the job's own passes: 12
		without = append(without, jobcontract.Iteration{Iter: i})
	}
	cold := point{cpus: 1, memLimit: 50 << 20, cold: true}
	for _, tc := range []struct {
		name                string
		all                 []jobcontract.Iteration
		start               int
		wantEnd, wantPasses int
	}{
		{"epochs: two passes complete, the third not", withEpochs, 12, 36, 2},
		{"epochs: inside the first", withEpochs[:20], 12, 12, 0},
		{"no epochs: the guessed 10-iteration pass", without, 10, 30, 2},
	} {
		end, passes, known := s.passBounds(cold, tc.all, tc.start, refill{})
		if !known || end != tc.wantEnd || passes != tc.wantPasses {
			t.Errorf("%s: end %d, passes %d, known %v; want %d, %d, true", tc.name, end, passes, known, tc.wantEnd, tc.wantPasses)
		}
	}
	s.cfg.MaxIterations = 25
	if got, want := s.maxIterationsFor(cold), s.cfg.Warmup+10+30+1; got != want {
		t.Errorf("a cold point with a cap of 25 is given %d iterations, want %d: its first pass, the cap rounded up to whole passes, one more", got, want)
	}
}

// A cold point's cap is whole passes; a scaled one measures as many passes
// of its sample as a full-size point would of the dataset.
func TestCapFor(t *testing.T) {
	cold := point{cpus: 1, memLimit: 50 << 20, cold: true}
	warm := point{cpus: 1}
	for _, tc := range []struct {
		name      string
		memScale  float64
		max       int
		pt        point
		wantCap   int
		wantGiven int // the job's --max-iterations, warm-up aside
	}{
		{"warm", 0, 25, warm, 25, 25},
		{"full size: 25 rounded up to a 100-iteration pass", 0, 25, cold, 100, 100 + 100 + 1},
		{"full size: 250, three passes", 0, 250, cold, 300, 100 + 300 + 1},
		{"scaled: one pass of the dataset is one of the sample", 0.1, 25, cold, 10, 10 + 10 + 1},
		{"scaled: three passes", 0.1, 250, cold, 30, 10 + 30 + 1},
	} {
		sw := newSweep(Config{Batch: 4, MaxIterations: tc.max, MemScale: tc.memScale, DataDir: "/data"}, Deps{})
		sw.data.datasetFiles, sw.data.scaled = 400, &scaledData{files: 40}
		s := sw.meter
		if got := s.capFor(tc.pt); got != tc.wantCap {
			t.Errorf("%s: cap %d, want %d", tc.name, got, tc.wantCap)
		}
		if got := s.maxIterationsFor(tc.pt) - s.cfg.Warmup; got != tc.wantGiven {
			t.Errorf("%s: the job is given %d iterations after its warm-up, want %d", tc.name, got, tc.wantGiven)
		}
	}
}

// A probe that saw no DataLoader batch is worth a warning that names how the
// point was measured instead, except at the step-only run, which feeds one
// synthetic batch again and has no loader to see.
func TestApplyProbe_NoLoaderWarningNamesTheMeasure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pt     point
		stream string
		want   string // "" for no warning
	}{
		{"no stream", point{cpus: 1}, "none", "measured from wall time only where its iterations are known ({iterations}, run to its end), else not at all"},
		{"script's stream", point{cpus: 1}, "script", "measured from the script's own metrics stream"},
		{"log lines", point{cpus: 1, phase: "log"}, "none", "measured from the job's own log lines (--progress-regex)"},
		{"step-only run", point{cpus: 1, phase: "step_only", synthetic: true}, "script", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSweep(Config{}, Deps{}).launcher
			if tc.name == "log lines" {
				s.progressRE, _ = compileProgress(`batch ([0-9]+)`)
			}
			r := &probeReport{State: "exited", Stream: tc.stream, Fallback: "wall_clock"}
			if err := s.applyProbe(tc.pt, r, pointEnd{}); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(s.rec.warnings, "\n")
			switch {
			case tc.want == "" && strings.Contains(got, "no DataLoader batch"):
				t.Errorf("warnings = %q, want none about the loader", s.rec.warnings)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("warnings = %q, want %q", s.rec.warnings, tc.want)
			}
		})
	}
}

// A script that writes its own stream makes the probe stand down, so it
// cannot emulate the GPU step: with emulation asked for, the sweep stops
// at the first launch instead of timing the script's real step under an
// emulated GPU's name.
func TestApplyProbe_EmulationWithTheScriptsOwnStreamIsRefused(t *testing.T) {
	s := newSweep(Config{}, Deps{}).launcher
	s.cfg.EmulateGPU = "v100"
	err := s.applyProbe(point{cpus: 1, phase: "step_only", synthetic: true}, &probeReport{State: "exited", Stream: "script"}, pointEnd{})
	if !errors.Is(err, errEmulationRefused) || !strings.Contains(err.Error(), "pass the script its own emulation flags") {
		t.Fatalf("err = %v, want the emulation refused, saying what to do", err)
	}
	s.cfg.EmulateGPU = ""
	if err := s.applyProbe(point{cpus: 1}, &probeReport{State: "exited", Stream: "script"}, pointEnd{}); err != nil {
		t.Errorf("no emulation asked for: %v", err)
	}
}

// The report of a job the profiler stopped is made final in the copy it
// keeps: not "running", and the script's stream named as such.
func TestFinalReport(t *testing.T) {
	got := string(finalReport([]byte(`{"state":"running","stream":"none","iterations":0,"notes":[]}`), 40))
	for _, want := range []string{`"state": "stopped"`, `"stream": "script"`, "stopped by synergy"} {
		if !strings.Contains(got, want) {
			t.Errorf("final report %s lacks %s", got, want)
		}
	}
	done := `{"state":"exited","stream":"probe"}`
	if got := string(finalReport([]byte(done), 40)); got != done {
		t.Errorf("a final report was rewritten: %s", got)
	}
	if got := string(finalReport([]byte(`{"state":"running","stream":"none"}`), 0)); strings.Contains(got, "script") {
		t.Errorf("no line in the stream, yet the report names the script's: %s", got)
	}
}
