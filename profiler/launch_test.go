package profiler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// liveRunner runs a fake job whose limits can change while it runs
// (runner.Updater). Its stream is paced in real time (the window logic
// compares the stream's timestamps with the time of a change) at
// rate(limits) samples/s; after a change the next `queue` iterations come
// 10× faster, as batches a prefetch queue filled before the change do
// (ready: only the step is left).
type liveRunner struct {
	rate  func(l runner.Limits) float64
	queue int
	noise float64
	// byData, when set, replaces rate with one that also sees the bytes
	// under the job's --data; anon is the memory its Stats report.
	byData func(l runner.Limits, dataBytes int64) float64
	anon   int64
	dirs   []string // each job's data directory
	// control, when set, makes the job answer the control channel: its
	// loader workers change (replay runs at replayRate samples/s).
	control    bool
	replayRate float64
	// oomBelow, when set, OOM-kills the job once its memory limit is
	// below it.
	oomBelow int64
	// oomOnSwap, when set, OOM-kills the job when it is asked to change
	// its loader's workers, before it answers; swapNeeds, when set, only
	// under a memory limit below it (the old and new workers both held).
	oomOnSwap bool
	swapNeeds int64
	// threads, when set, makes the job report its threads (its
	// OMP_NUM_THREADS at start) and take a threads command; inProcess
	// makes its loader in-process (0 workers whatever --workers says).
	threads, inProcess bool

	mu      sync.Mutex
	started int
	updates int
	events  []string // "mem N" (a limit set) and "workers N" (a loader change), in order
}

func (f *liveRunner) event(format string, args ...any) {
	f.mu.Lock()
	f.events = append(f.events, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

var _ runner.Runner = (*liveRunner)(nil)

func (f *liveRunner) Name() string { return "live-fake" }

func (f *liveRunner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	f.mu.Lock()
	f.started++
	n := f.started
	f.mu.Unlock()
	path, maxIter, batch, workers := contractOf(job)
	h := &liveHandle{r: f, rate: f.rate, limits: job.Limits, stop: make(chan struct{}), done: make(chan struct{}), workers: workers}
	if f.inProcess {
		h.workers = 0
	}
	for _, e := range job.Env {
		if v, ok := strings.CutPrefix(e, "OMP_NUM_THREADS="); ok && f.threads {
			h.threads, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(e, jobcontract.EnvControlFile+"="); ok && f.control {
			h.ctl = jobcontract.NewLineReader(v)
		}
		if v, ok := strings.CutPrefix(e, jobcontract.EnvControlAckFile+"="); ok {
			h.ackPath = v
		}
	}
	if f.byData != nil {
		n, _, _ := DatasetSize(job.DataDir)
		h.rate = func(l runner.Limits) float64 { return f.byData(l, n) }
	}
	f.mu.Lock()
	f.dirs = append(f.dirs, job.DataDir)
	f.mu.Unlock()
	go h.run(ctx, path, maxIter, batch, rand.New(rand.NewPCG(uint64(n), 9)))
	return h, nil
}

type liveHandle struct {
	r        *liveRunner
	rate     func(l runner.Limits) float64
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	res      runner.Result

	mu     sync.Mutex
	limits runner.Limits
	queued int // iterations left from the queue

	ctl     *jobcontract.LineReader // nil: the job does not listen
	ackPath string
	workers int
	threads int // 0: the job does not report threads
	replay  bool
	acked   []jobcontract.ControlAck
	// oomKilled: listen met a command the fake dies of (oomOnSwap).
	oomKilled bool
}

// listen applies the commands appended since the last iteration; the
// first answer of each is timed at iteration i, whose batch is the first
// under the new settings (the fake's queue stands for the old workers'
// prefetched batches, which a worker change drops).
func (h *liveHandle) listen(i int, ts float64) {
	if h.ctl == nil {
		return
	}
	if i == 0 {
		h.answer(jobcontract.ControlAck{Seq: 0, Workers: h.workers, Threads: h.threads, TS: ts, Iter: i})
	}
	lines, _ := h.ctl.Next()
	for _, l := range lines {
		c, err := jobcontract.ParseControl(l)
		if err != nil {
			h.answer(jobcontract.ControlAck{Seq: c.Seq, Error: err.Error()})
			continue
		}
		h.mu.Lock()
		if m := h.limits.MemLimitBytes; c.Workers != nil && (h.r.oomOnSwap || (m > 0 && m < h.r.swapNeeds)) {
			h.mu.Unlock()
			h.oomKilled = true
			return
		}
		if c.Workers != nil {
			h.workers, h.queued = *c.Workers, 0
			h.r.event("workers %d", h.workers)
		}
		if c.Replay != nil {
			h.replay = *c.Replay
		}
		if c.Threads != nil && h.threads > 0 {
			h.threads = *c.Threads
			h.r.event("threads %d", h.threads)
		}
		a := jobcontract.ControlAck{Seq: c.Seq, Workers: h.workers, Threads: h.threads, Replay: h.replay, TS: ts, Iter: i}
		h.mu.Unlock()
		h.answer(a)
	}
}

func (h *liveHandle) answer(a jobcontract.ControlAck) {
	h.acked = append(h.acked, a)
	jobcontract.AppendAck(h.ackPath, a)
}

var _ runner.Updater = (*liveHandle)(nil)

func (h *liveHandle) run(ctx context.Context, path string, maxIter, batch int, rng *rand.Rand) {
	defer close(h.done)
	out, _ := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	defer out.Close()
	vt := float64(time.Now().UnixNano()) / 1e9
	for i := 0; i < maxIter; i++ {
		h.listen(i, vt)
		h.mu.Lock()
		if m := h.limits.MemLimitBytes; h.oomKilled || (m > 0 && m < h.r.oomBelow) {
			h.mu.Unlock()
			h.res = runner.Result{ExitCode: -1, Signal: "killed", OOMKilled: true}
			return
		}
		rate := h.rate(h.limits)
		if h.replay {
			rate = h.r.replayRate
		}
		if h.queued > 0 {
			rate = 10 * rate
			h.queued--
		}
		h.mu.Unlock()
		vt += float64(batch) / rate * (1 + h.r.noise*(rng.Float64()-0.5))
		if d := time.Until(time.Unix(0, int64(vt*1e9))); d > 0 {
			select {
			case <-h.stop:
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			case <-ctx.Done():
				h.res = runner.Result{ExitCode: -1, Signal: "killed", Stopped: true}
				return
			case <-time.After(d):
			}
		}
		line, _ := json.Marshal(map[string]any{"iter": i, "samples": batch, "data_wait_s": 0.001, "step_s": 0.001, "ts": vt, "epoch": i / 10})
		// The epoch of a pass the job goes on with whatever the settings.
		out.Write(append(line, '\n'))
	}
}

func (h *liveHandle) Update(ctx context.Context, l runner.Limits) error {
	select {
	case <-h.done:
		return runner.ErrNotRunning
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queued = h.r.queue
	h.limits = l
	h.r.mu.Lock()
	h.r.updates++
	h.r.mu.Unlock()
	h.r.event("mem %d", l.MemLimitBytes)
	return nil
}

func (h *liveHandle) Stats() (runner.Stats, error) {
	return runner.Stats{MemAnonBytes: h.r.anon, Has: runner.StatMemAnon}, nil
}
func (h *liveHandle) CgroupPaths() map[string]string { return nil }
func (h *liveHandle) Stop() error                    { h.stopOnce.Do(func() { close(h.stop) }); return nil }
func (h *liveHandle) Wait() (runner.Result, error)   { <-h.done; return h.res, nil }

// fastRate is trueRate scaled up 4×, so that a point takes a fraction of
// a second of real time: 400 samples/s per core up to 2 cores, 480 under
// 100 MiB.
func fastRate(l runner.Limits) float64 { return 4 * trueRate(l) }

// cancelAfter is a Progress that cancels the sweep after n points.
type cancelAfter struct {
	notes
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) PointDone(string, sensitivity.Cell, time.Duration) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
}

// evictions counts the dataset's evictions (a Cache that controls
// nothing else).
type evictions struct{ n int }

func (e *evictions) Evict(string) (int, error)             { e.n++; return 1, nil }
func (e *evictions) Resident(string) (int64, int64, error) { return 0, 0, nil }
func (e *evictions) Warm(string) error                     { return nil }

// oneLaunchConfig is a grid over 3 CPU counts needing 1, 1 and 2 loader
// workers and two memory limits, on a job that answers the control
// channel, with the stall breakdown on.
func oneLaunchConfig(t *testing.T, lr *liveRunner) testConfig {
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Strategy, cfg.Cache = lr, StrategyGrid, &evictions{}
	cfg.CPUs, cfg.MemLimits = []float64{0.5, 1, 2}, []int64{50 << 20, 1 << 30}
	cfg.StallBreakdown = true
	return cfg
}

func TestRun_OneLaunchServesEveryPoint(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true, replayRate: 2000}
	cfg := oneLaunchConfig(t, lr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Launches != 1 || lr.started != 1 || len(p.Cost.Relaunches) != 0 {
		t.Fatalf("launches %d (runner started %d), relaunches %q: want one launch", p.Cost.Launches, lr.started, p.Cost.Relaunches)
	}
	if p.Cost.Points != 10 || lr.updates < 8 {
		t.Fatalf("points %d with %d limit changes, want 9 cells and the step-only, changed in place", p.Cost.Points, lr.updates)
	}
	if so := p.StepOnly; so == nil || so.Source != sensitivity.StepOnlyReplay || math.Abs(so.SamplesPerS-2000)/2000 > 0.05 {
		t.Fatalf("step-only %+v, want the replayed batch's 2000 samples/s", so)
	}
	for _, c := range p.MeasuredOK() {
		truth := fastRate(runner.Limits{CPUs: c.CPUs, MemLimitBytes: c.MemLimitBytes})
		// Each point measures its own settings: the old settings' queue
		// is dropped with the settling, a cold one's passes follow the
		// eviction.
		if rel := math.Abs(c.SamplesPerS-truth) / truth; rel > 0.04 {
			t.Errorf("cell cpus=%g mem=%d: %.1f samples/s, truth %.1f (%.1f%% off)", c.CPUs, c.MemLimitBytes, c.SamplesPerS, truth, 100*rel)
		}
		st := c.Stats
		if st.Launch != 1 || st.Workers != Workers(c.CPUs, 1) {
			t.Errorf("cell cpus=%g mem=%d: launch %d, %d workers", c.CPUs, c.MemLimitBytes, st.Launch, st.Workers)
		}
		if !sensitivity.Unlimited(c.MemLimitBytes) && (st.MeasuredPasses < 1 || st.MeasuredPasses != math.Trunc(st.MeasuredPasses)) {
			t.Errorf("cell cpus=%g mem=%d: %v passes measured, want whole ones", c.CPUs, c.MemLimitBytes, st.MeasuredPasses)
		}
	}
	if n := len(p.MeasuredOK()); n != 9 {
		t.Errorf("%d cells measured, want 9", n)
	}
	if e := cfg.Cache.(*evictions).n; e != 6 {
		t.Errorf("the dataset was evicted %d times, want once per limited point (6)", e)
	}
}

func TestRun_InPlaceThreadsAndWorkersAreAFreshLaunchs(t *testing.T) {
	// Issue 44: a job launched at 1 core and moved to 2 and back gets the
	// threads a launch at each point sets, and its in-process loader
	// (num_workers=0) stays in-process, as at every fresh launch; each
	// cell records what the job said it ran. In place and relaunched alike.
	for _, relaunch := range []bool{false, true} {
		lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true, threads: true, inProcess: true}
		cfg := oneLaunchConfig(t, lr)
		cfg.StallBreakdown, cfg.Relaunch = false, relaunch
		cfg.CPUs = []float64{1, 2, 3}
		p, err := run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !relaunch && p.Cost.Launches != 1 {
			t.Fatalf("launches %d, relaunches %q: want one", p.Cost.Launches, p.Cost.Relaunches)
		}
		for _, c := range p.MeasuredOK() {
			st := c.Stats
			if st.Threads != threads(c.CPUs) || st.WorkersUsed == nil || *st.WorkersUsed != 0 || st.Workers != Workers(c.CPUs, 1) {
				t.Errorf("relaunch=%v cpus=%g mem=%d: threads %d, workers used %v; want %d threads, 0 workers (in-process)",
					relaunch, c.CPUs, c.MemLimitBytes, st.Threads, st.WorkersUsed, threads(c.CPUs))
			}
		}
		var threadEvents []string
		for _, e := range lr.events {
			if strings.HasPrefix(e, "workers") {
				t.Errorf("relaunch=%v: the in-process loader was given workers: %q", relaunch, lr.events)
				break
			}
			if strings.HasPrefix(e, "threads") {
				threadEvents = append(threadEvents, e)
			}
		}
		// Grid order: 1, 2, 3 cores unlimited, then each limited.
		if !relaunch && (len(threadEvents) < 4 || threadEvents[0] != "threads 2" || threadEvents[1] != "threads 3" || threadEvents[2] != "threads 1") {
			t.Errorf("threads changes %q, want 2, 3, then down to 1 ...", threadEvents)
		}
		if relaunch && len(threadEvents) != 0 {
			t.Errorf("relaunched: threads changed in place %q", threadEvents)
		}
	}
}

func TestRun_AJobThatDoesNotListenIsRelaunchedWhereItsWorkersChange(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04}
	cfg := oneLaunchConfig(t, lr)
	cfg.StallBreakdown = false
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Grid order: 0.5 and 1 (1 worker) share the first launch; 2 needs 2
	// workers; the limited points go 0.5, 1 (1 worker: a launch), then 2.
	if p.Cost.Launches != lr.started || p.Cost.Launches < 2 || len(p.Cost.Relaunches) != p.Cost.Launches-1 {
		t.Fatalf("launches %d (started %d), relaunches %q", p.Cost.Launches, lr.started, p.Cost.Relaunches)
	}
	for _, r := range p.Cost.Relaunches {
		if !strings.Contains(r, "control channel") {
			t.Errorf("relaunch %q does not say the job does not answer the control channel", r)
		}
	}
	if p.Cost.Launches >= p.Cost.Points {
		t.Errorf("%d launches for %d points: points needing the same workers share none", p.Cost.Launches, p.Cost.Points)
	}
}

func TestRun_ARunnerThatCannotUpdateRelaunchesEveryPoint(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, noise: 0.05}
	cfg := baseConfig(t, fr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Launches != p.Cost.Points || fr.started != p.Cost.Points {
		t.Errorf("launches %d (started %d) for %d points, want one per point", p.Cost.Launches, fr.started, p.Cost.Points)
	}
	if len(p.Cost.Relaunches) == 0 || !strings.Contains(p.Cost.Relaunches[0], "cannot change a running job's limits") {
		t.Errorf("relaunches %q, want the runner named", p.Cost.Relaunches)
	}
}

func TestRun_AnOOMKillInPlaceIsRecordedAndTheNextPointRelaunches(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true, oomBelow: 100 << 20}
	cfg := oneLaunchConfig(t, lr)
	cfg.StallBreakdown = false
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ooms := 0
	for _, c := range p.Cells {
		if c.Measured && c.Failure != nil {
			if c.Failure.Class != sensitivity.FailOOMKilled || c.MemLimitBytes != 50<<20 {
				t.Errorf("cell cpus=%g mem=%d failed %+v, want OOM-killed at 50MiB only", c.CPUs, c.MemLimitBytes, c.Failure)
			}
			ooms++
		}
	}
	if ooms != 3 || p.Cost.Launches != 3 {
		t.Fatalf("%d OOM kills in %d launches, want 3 in 3 (relaunches %q)", ooms, p.Cost.Launches, p.Cost.Relaunches)
	}
	// The relaunch says why: the kill, the limit and the point it was measuring.
	if why := p.Cost.Relaunches[0]; !strings.Contains(why, "OOM-killed under its memory limit of 50MiB at ") {
		t.Errorf("relaunch %q does not say the OOM kill, its limit and the point", why)
	}
}

// A move that lowers the memory limit and changes the loader's workers
// changes the workers first, under the old limit (the job starts its new
// workers before it stops the old ones), and then lowers the limit.
func TestRun_AMoveChangesTheWorkersBeforeItLowersTheMemoryLimit(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true}
	cfg := oneLaunchConfig(t, lr)
	cfg.CPUs, cfg.MemLimits, cfg.StallBreakdown = []float64{1, 2}, []int64{1 << 30}, false
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Launches != 1 {
		t.Fatalf("%d launches (relaunches %q), want 1", p.Cost.Launches, p.Cost.Relaunches)
	}
	// (1, unlimited), (2, unlimited), then (1, 1GiB): 2 workers become 1
	// and the limit goes from none to 1 GiB in one move.
	lowered := slices.Index(lr.events, fmt.Sprintf("mem %d", 1<<30))
	if lowered < 1 || lr.events[lowered-1] != "workers 1" {
		t.Fatalf("events %q: want the loader's 1 worker just before the limit of 1 GiB", lr.events)
	}
}

// A worker change under a memory limit runs with the limit raised to the
// host's memory: the job holds its old and new workers for a moment.
func TestRun_AWorkerChangeUnderALimitRunsUnderTheHostsMemory(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true, swapNeeds: 2 << 30}
	cfg := oneLaunchConfig(t, lr)
	cfg.CPUs, cfg.MemLimits, cfg.StallBreakdown = []float64{1, 2}, []int64{1 << 30}, false
	cfg.Host.DRAMBytes = 8 << 30
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Launches != 1 {
		t.Fatalf("%d launches (relaunches %q), want 1", p.Cost.Launches, p.Cost.Relaunches)
	}
	// (1, 1GiB) then (2, 1GiB): 1 worker becomes 2 under 8 GiB.
	want := []string{fmt.Sprintf("mem %d", 8<<30), "workers 2", fmt.Sprintf("mem %d", 1<<30)}
	if n := len(lr.events); n < 3 || !slices.Equal(lr.events[n-3:], want) {
		t.Fatalf("events %q: want them to end %q", lr.events, want)
	}
}

// A job OOM-killed while its loader changes is relaunched for the point,
// and the profile says so, not only that it ended.
func TestRun_AJobKilledWhileItsLoaderChangesIsRelaunchedAndSaysWhy(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04, control: true, oomOnSwap: true}
	cfg := oneLaunchConfig(t, lr)
	cfg.CPUs, cfg.MemLimits, cfg.StallBreakdown = []float64{1, 2}, []int64{1 << 30}, false
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cost.Relaunches) == 0 {
		t.Fatal("no relaunch recorded")
	}
	if why := p.Cost.Relaunches[0]; !strings.Contains(why, "OOM-killed") || !strings.Contains(why, "loader workers became 2") {
		t.Errorf("relaunch %q: want the OOM kill while 1 loader worker became 2", why)
	}
	for _, c := range p.Cells {
		if c.Measured && c.Failure != nil {
			t.Errorf("cell cpus=%g mem=%d failed (%+v): the point should have been measured in a new launch", c.CPUs, c.MemLimitBytes, c.Failure)
		}
	}
}

func TestRun_OneLaunchInterruptedSweepResumes(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 6, noise: 0.04, control: true}
	cfg := oneLaunchConfig(t, lr)
	cfg.StallBreakdown = false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled during the third point (in place in the first launch).
	cfg.Progress = &cancelAfter{n: 2, cancel: cancel}
	p, err := run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if p.Cost.Points != 2 || p.Cost.StopReason != sensitivity.SweepStopInterrupted || lr.started != 1 {
		t.Fatalf("interrupted profile: %d points in %d launches, stop %q; want 2 in 1, interrupted", p.Cost.Points, lr.started, p.Cost.StopReason)
	}
	cfg.Resume, cfg.Progress = true, nil
	p, err = run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Points != 9 || p.Cost.StopReason != sensitivity.SweepStopComplete || p.Cost.Launches != 2 || lr.started != 2 {
		t.Errorf("resumed profile: %d points, %d launches, stop %q; want 9 points in 2 launches, complete; warnings %q", p.Cost.Points, p.Cost.Launches, p.Cost.StopReason, p.Warnings)
	}
}

// A point changed in place under a memory limit is measured once the
// eviction's refill is read, over whole pass-lengths that need not begin
// where the job's passes do: with a shuffled pass's hits falling from its
// start to its end, such a window reads what an aligned whole pass reads,
// and a part of a pass would not.
func TestMeter_InPlaceColdWindowIsWholePassLengths(t *testing.T) {
	sw := newSweep(Config{Batch: 4, Warmup: 5, MaxIterations: 40}, Deps{})
	sw.data.datasetFiles, sw.data.datasetBytes = 40, 100<<20 // a pass: 10 iterations of 4 files
	m := sw.meter
	// The job's stream: 4 samples an iteration, fast at a pass's start
	// (cache hits), slow at its end; the eviction came at iteration 3 of
	// epoch 2, where this point's part of the stream begins.
	var all []jobcontract.Iteration
	ts := 1.7e9
	for i := 23; i < 23+60; i++ {
		pos := i % 10
		ts += 4 / (200 - 15*float64(pos))
		e := i / 10
		all = append(all, jobcontract.Iteration{Iter: i, Samples: 4, TS: ts, Epoch: &e})
	}
	cold := point{cpus: 1, memLimit: 60 << 20, cold: true}
	plen := m.passLength(cold, all)
	if plen != 10 {
		t.Fatalf("pass length %d, want the stream's 10", plen)
	}
	// 60 MiB of a 100 MiB dataset with 10 MiB of anonymous memory: half a
	// pass refills the cache (and at least the settling: 5 iterations).
	need := m.refillIterations(cold, plen, 10<<20)
	if need != 5 {
		t.Fatalf("refill %d iterations, want 5", need)
	}
	if full := m.refillIterations(cold, plen, 0); full != 6 {
		t.Fatalf("refill with the anonymous memory unknown: %d iterations, want 6 (all of the limit taken as cache)", full)
	}
	rf := refill{inPlace: true, need: need, passLen: plen}
	win, _ := m.window(cold, all, rf)
	if n := len(win) - 1; n%plen != 0 || n == 0 {
		t.Fatalf("window of %d measured iterations, want whole pass-lengths of %d", n, plen)
	}
	if win[0].Iter != all[need-1].Iter {
		t.Errorf("window anchored at iter %d, want %d (the refill's last)", win[0].Iter, all[need-1].Iter)
	}
	// The aligned whole pass (epoch 4) against the window.
	var pass []jobcontract.Iteration
	for i, it := range all {
		if *it.Epoch == 4 {
			pass = append(pass, all[i-1:i+10]...)
			break
		}
	}
	got, want := estimate(win).SamplesPerS, estimate(pass).SamplesPerS
	if math.Abs(got/want-1) > 0.005 {
		t.Errorf("unaligned whole pass-lengths read %.2f samples/s, an aligned pass %.2f", got, want)
	}
	if part := estimate(all[need-1 : need+5]).SamplesPerS; math.Abs(part/want-1) < 0.02 {
		t.Errorf("half a pass reads %.2f, as a whole one (%.2f): the test's shape shows nothing", part, want)
	}
	if passes, known := m.passCoverage(cold, all[:need+4], rf); !known || passes >= 1 {
		t.Errorf("coverage %v (known %v) before a whole pass-length was read, want under 1", passes, known)
	}
}
