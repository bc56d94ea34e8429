package profiler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
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

	mu      sync.Mutex
	started int
	updates int
}

var _ runner.Runner = (*liveRunner)(nil)

func (f *liveRunner) Name() string { return "live-fake" }

func (f *liveRunner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	f.mu.Lock()
	f.started++
	n := f.started
	f.mu.Unlock()
	var path string
	for _, e := range job.Env {
		if v, ok := strings.CutPrefix(e, jobcontract.EnvMetricsFile+"="); ok {
			path = v
		}
	}
	var maxIter, batch int
	for i, a := range job.Argv {
		switch a {
		case "--max-iterations":
			fmt.Sscan(job.Argv[i+1], &maxIter)
		case "--batch":
			fmt.Sscan(job.Argv[i+1], &batch)
		}
	}
	h := &liveHandle{r: f, rate: f.rate, limits: job.Limits, stop: make(chan struct{}), done: make(chan struct{})}
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
}

var _ runner.Updater = (*liveHandle)(nil)

func (h *liveHandle) run(ctx context.Context, path string, maxIter, batch int, rng *rand.Rand) {
	defer close(h.done)
	out, _ := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	defer out.Close()
	vt := float64(time.Now().UnixNano()) / 1e9
	for i := 0; i < maxIter; i++ {
		h.mu.Lock()
		rate := h.rate(h.limits)
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

func TestRun_WindowsShareALaunchOnlyWhereMemoryIsUnlimited(t *testing.T) {
	// 2 workers at every point: a queue of 2 × 2 batches.
	lr := &liveRunner{rate: fastRate, queue: 4, noise: 0.04}
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Windows, cfg.Strategy = lr, true, StrategyGrid
	cfg.CPUs, cfg.MemLimits = []float64{1.25, 1.5, 2}, []int64{50 << 20}
	p, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Grid order: the CPU axis unlimited (one launch, 2 limit changes),
	// then cpus 1.25, 1.5, 2 at 50MiB, each from a cold start (a launch
	// each: a point under a memory limit is never a window): 6 points in 4
	// launches.
	if p.Cost.Points != 6 || p.Cost.Launches != 4 || lr.started != 4 || lr.updates != 2 {
		t.Fatalf("points %d launches %d (runner started %d, updated %d), want 6 points in 4 launches with 2 updates",
			p.Cost.Points, p.Cost.Launches, lr.started, lr.updates)
	}
	for _, c := range p.Cells {
		if !c.Measured {
			continue
		}
		truth := fastRate(runner.Limits{CPUs: c.CPUs, MemLimitBytes: c.MemLimitBytes})
		// Each window must measure its own limits: the queue's 6 batches
		// are dropped with the settling iterations.
		if rel := math.Abs(c.SamplesPerS-truth) / truth; c.Failure != nil || rel > 0.04 {
			t.Errorf("cell cpus=%g mem=%d: %.1f samples/s, truth %.1f (%.1f%% off), failure %+v", c.CPUs, c.MemLimitBytes, c.SamplesPerS, truth, 100*rel, c.Failure)
		}
		wantLaunch, first := 1, c.CPUs == 1.25
		if !sensitivity.Unlimited(c.MemLimitBytes) {
			wantLaunch, first = map[float64]int{1.25: 2, 1.5: 3, 2: 4}[c.CPUs], true
		}
		st := c.Stats
		if st.Launch != wantLaunch || st.InPlace == first || st.Workers != 2 {
			t.Errorf("cell cpus=%g mem=%d: launch %d in_place %v workers %d, want launch %d, in_place %v, 2 workers",
				c.CPUs, c.MemLimitBytes, st.Launch, st.InPlace, st.Workers, wantLaunch, !first)
		}
		if st.MeasureSeconds <= 0 || st.WarmupSeconds <= 0 || st.MeasureSeconds+st.WarmupSeconds > st.WallSeconds+1e-6 {
			t.Errorf("cell cpus=%g: warm-up %.3fs + measure %.3fs vs wall %.3fs", c.CPUs, st.WarmupSeconds, st.MeasureSeconds, st.WallSeconds)
		}
	}
	if _, err := sensitivity.Load(cfg.Out); err != nil {
		t.Errorf("the saved profile does not read back: %v", err)
	}
}

func TestRun_WindowsOffOrUnsupportedRestartEveryPoint(t *testing.T) {
	for _, tt := range []struct {
		name    string
		windows bool
		warn    string
	}{
		{"off", false, ""},
		{"runner cannot update", true, "cannot change a running job's limits"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fr := &fakeRunner{rate: trueRate, noise: 0.05}
			cfg := baseConfig(t, fr)
			cfg.Windows = tt.windows
			p, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Cost.Launches != p.Cost.Points || fr.started != p.Cost.Points {
				t.Errorf("launches %d (started %d) for %d points, want one per point", p.Cost.Launches, fr.started, p.Cost.Points)
			}
			found := tt.warn == ""
			for _, w := range p.Warnings {
				found = found || strings.Contains(w, tt.warn)
			}
			if !found {
				t.Errorf("warnings %q, want one saying %q", p.Warnings, tt.warn)
			}
		})
	}
}

func TestSettleAnchor(t *testing.T) {
	its := func(ts ...float64) []jobcontract.Iteration {
		out := make([]jobcontract.Iteration, len(ts))
		for i, v := range ts {
			out[i] = jobcontract.Iteration{Iter: i, Samples: 1, TS: v}
		}
		return out
	}
	// Iterations end at 10.0, 10.1, ... 10.9; the change at 10.25.
	all := its(10.0, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 10.7, 10.8, 10.9)
	tests := []struct {
		name   string
		settle int
		minS   float64
		want   int
	}{
		// iteration 3 (ends 10.3) straddles; 4 is the first to start after
		// 10.25 (3 ended 10.3); settle 1 makes 4 the anchor.
		{"straddle only", 1, 0, 4},
		// settle 3: 4, 5, 6 dropped, 6 anchors.
		{"settle iterations", 3, 0, 6},
		// at least 0.5s after 10.25: the anchor must end >= 10.75, so 8.
		{"settle seconds", 1, 0.5, 8},
		// not enough stream yet.
		{"not yet", 8, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settleAnchor(all, 10.25, tt.settle, tt.minS); got != tt.want {
				t.Errorf("settleAnchor = %d, want %d", got, tt.want)
			}
		})
	}
}

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

func TestRun_WindowsInterruptedSweepResumes(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 6, noise: 0.04}
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Windows, cfg.Strategy = lr, true, StrategyGrid
	cfg.CPUs, cfg.MemLimits = []float64{1.25, 1.5, 2}, []int64{50 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled during the third point (a window of the first launch).
	cfg.Progress = &cancelAfter{n: 2, cancel: cancel}
	p, err := Run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if p.Cost.Points != 2 || p.Cost.StopReason != sensitivity.SweepStopInterrupted {
		for _, c := range p.Cells {
			t.Logf("%g %d measured=%v %+v", c.CPUs, c.MemLimitBytes, c.Measured, c.Stats)
		}
		t.Fatalf("interrupted profile: %d points, stop %q; want 2, interrupted", p.Cost.Points, p.Cost.StopReason)
	}
	cfg.Resume, cfg.Progress = true, nil
	p, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 6 cells; the resumed run starts a new launch for its first point
	// (the last unlimited one), then one for each limited point.
	if p.Cost.Points != 6 || p.Cost.StopReason != sensitivity.SweepStopComplete || p.Cost.Launches != 5 {
		t.Errorf("resumed profile: %d points, %d launches, stop %q; want 6 points in 5 launches, complete; warnings %q", p.Cost.Points, p.Cost.Launches, p.Cost.StopReason, p.Warnings)
	}
	for _, c := range p.Cells {
		if c.Measured && c.Failure != nil {
			t.Errorf("cell cpus=%g mem=%d failed: %+v", c.CPUs, c.MemLimitBytes, c.Failure)
		}
	}
}

func TestRun_WindowsWorkWithEveryStrategy(t *testing.T) {
	for _, strategy := range Strategies() {
		t.Run(strategy, func(t *testing.T) {
			lr := &liveRunner{rate: fastRate, queue: 6, noise: 0.04}
			cfg := baseConfig(t, nil)
			cfg.Runner, cfg.Windows, cfg.Strategy = lr, true, strategy
			// 1 worker for 0.5 and 1 core, 2 for 1.5 and 2.
			cfg.CPUs, cfg.MemLimits = []float64{0.5, 1, 1.5, 2}, []int64{50 << 20}
			p, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Axes and grid walk the CPU axis in order and share launches;
			// optimistic and synergy jump between worker counts.
			fewer := strategy == StrategyAxes || strategy == StrategyGrid
			if p.Cost.Points < 2 || p.Cost.Launches > p.Cost.Points || (fewer && p.Cost.Launches >= p.Cost.Points) || lr.started != p.Cost.Launches {
				t.Errorf("%d points in %d launches (runner started %d)", p.Cost.Points, p.Cost.Launches, lr.started)
			}
			for _, c := range p.Cells {
				if c.Measured && c.Failure != nil {
					t.Errorf("cell cpus=%g mem=%d failed: %+v", c.CPUs, c.MemLimitBytes, c.Failure)
				}
				if c.Measured && c.Stats.Workers != Workers(c.CPUs, 1) {
					t.Errorf("cell cpus=%g ran %d workers, want %d", c.CPUs, c.Stats.Workers, Workers(c.CPUs, 1))
				}
			}
		})
	}
}

func TestRun_WindowsRestartWhereTheWorkerCountChanges(t *testing.T) {
	lr := &liveRunner{rate: fastRate, queue: 2, noise: 0.04}
	cfg := baseConfig(t, nil)
	cfg.Runner, cfg.Windows, cfg.Strategy = lr, true, StrategyGrid
	// ceil(cpus): 1, 1, 2, 2 workers; memory: unlimited only.
	cfg.CPUs, cfg.MemLimits = []float64{0.5, 1, 1.5, 2}, nil
	p, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cost.Launches != 2 {
		t.Errorf("%d launches, want 2 (one per worker count)", p.Cost.Launches)
	}
	for _, c := range p.Cells {
		if c.Measured && c.Stats.Workers != Workers(c.CPUs, 1) {
			t.Errorf("cell cpus=%g ran %d workers, want its own %d", c.CPUs, c.Stats.Workers, Workers(c.CPUs, 1))
		}
	}
}
