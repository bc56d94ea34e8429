package profiler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Windows (Config.Windows, docs/cost.md): consecutive points of the
// unlimited memory column are measured in one launch of the job (a point
// under a memory limit always starts cold: windowed). The first point of a
// launch is measured as a restarted point is (warm-up dropped); for each
// later point the sweep changes the running
// job's CPU limits (runner.Updater), drops the iterations that straddle the
// change and a settling run after it, and measures the window until the
// interval criterion holds or a cap is reached. The loader's worker count
// is fixed at launch, so only points needing the same count share one.

// windows is a sweep's windowed-launch state.
type windows struct {
	live *launch
	off  bool // the runner cannot update limits: a launch per point
}

// launch is one run of the job serving consecutive points as windows.
type launch struct {
	id       int
	memLimit int64
	workers  int
	first    point // the point it was started for: names its stream
	run      *pointRun
	u        runner.Updater
	waitCh   chan pointEnd
	end      *pointEnd // set once the job has ended
	windows  int       // windows measured so far
}

// Settling after a limit change: at least settleIterations(workers)
// iterations and settleMin seconds are dropped.
const settleMin = 200 * time.Millisecond // two CFS periods

// settleIterations is how many whole iterations after a change are dropped:
// the warm-up count, and at least the loader's prefetch queue (2 batches
// per worker, PyTorch's default prefetch_factor), which was filled at the
// old limits and drains first.
func (s *sweep) settleIterations(workers int) int { return max(s.cfg.Warmup, 2*workers) }

// windowed reports whether pt is measured as a window. A point under a
// memory limit never is: it starts from a cold cache and measures whole
// passes from its second (point.go, window), the same passes a restarted
// or full-size point measures. In a window it would measure whatever
// later pass the launch had reached, and under a limit the kernel's page
// cache hits more from pass to pass (docs/cost.md, "Whole passes": 85
// samples/s over the second pass at 20 GiB of the 32 GiB dataset, 102 in
// windows of the same launch).
func (s *sweep) windowed(pt point) bool {
	return s.cfg.Windows && !s.win.off && !pt.synthetic && !pt.cold
}

// measurePoint measures pt in a window of a running launch, or restarts
// the job for it.
func (s *sweep) measurePoint(ctx context.Context, pt point) (sensitivity.Cell, error) {
	if err := s.prepareScaled(pt); err != nil {
		return sensitivity.Cell{}, err
	}
	if cell, skip := s.tooSlowForTimeout(pt); skip {
		return cell, nil
	}
	if cell, skip := s.predictedOOM(pt); skip {
		return cell, nil
	}
	cell, err := s.measurePointAt(ctx, pt)
	s.markScaled(pt, &cell)
	return cell, err
}

// measurePointAt measures pt at its (possibly scaled) limits.
func (s *sweep) measurePointAt(ctx context.Context, pt point) (sensitivity.Cell, error) {
	if !s.windowed(pt) {
		s.endLaunch()
		s.prof.Cost.Launches++
		cell, err := s.runPoint(ctx, pt)
		if cell.Stats != nil && err == nil {
			cell.Stats.Launch = s.prof.Cost.Launches
			s.pointCost(cell.Stats, cell.SamplesPerS)
		}
		return cell, err
	}
	if l := s.win.live; l != nil && (l.memLimit != pt.memLimit || l.workers != s.launchWorkers(pt) || l.end != nil) {
		s.endLaunch()
	}
	if s.win.live == nil {
		return s.startLaunch(ctx, pt)
	}
	return s.runWindow(ctx, pt)
}

// pointCost splits a restarted point's wall time into measurement (the
// measured iterations' span, set by measure) and the rest.
func (s *sweep) pointCost(st *sensitivity.PointStats, _ float64) {
	st.MeasureSeconds = math.Min(st.WallSeconds, st.MeasureSeconds)
	st.WarmupSeconds = st.WallSeconds - st.MeasureSeconds
}

// launchIterations is the --max-iterations of a windowed launch: enough
// for every point of the CPU axis to run its warm-up or settling and its
// cap (a windowed launch is never cold: windowed).
func (s *sweep) launchIterations(pt point) int {
	per := s.cfg.MaxIterations + s.settleIterations(s.launchWorkers(pt)) + 1
	return s.cfg.Warmup + per*len(s.prof.Axes.CPUs)
}

// launchWorkers is the loader worker count of a windowed launch: the
// point's own, ceil(cpus / gpus). The worker count is fixed at launch, so
// points share a launch only when they need the same count: measured on
// the image preset, a point at 0.5 cores run with the 2 workers the axis'
// largest count needs was 35–51% slower than restarted with its own 1
// (docs/cost.md); with equal counts a window differs from a restart only
// by being in place.
func (s *sweep) launchWorkers(pt point) int { return Workers(pt.cpus, s.cfg.GPUs) }

// startLaunch starts the job for pt and measures pt as its first window.
func (s *sweep) startLaunch(ctx context.Context, pt point) (sensitivity.Cell, error) {
	if ctx.Err() != nil {
		return sensitivity.Cell{}, errInterrupted
	}
	pt.launchWorkers, pt.launchIters = s.launchWorkers(pt), s.launchIterations(pt)
	cell := sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase}
	cell.Stats = &sensitivity.PointStats{Workers: pt.launchWorkers, ColdStart: pt.cold}
	if err := s.prepareCache(pt, cell.Stats); err != nil {
		return cell, err
	}
	run, err := s.prepare(pt)
	if err != nil {
		return cell, err
	}
	s.prof.Cost.Launches++
	if err := s.launch(ctx, pt, run); err != nil {
		run.close()
		if ctx.Err() != nil {
			return cell, errInterrupted
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailStartFailed, Message: err.Error()}
		return cell, nil
	}
	l := &launch{id: s.prof.Cost.Launches, memLimit: pt.memLimit, workers: pt.launchWorkers, first: pt,
		run: run, u: runner.AsUpdater(run.h), waitCh: make(chan pointEnd, 1)}
	go func() {
		res, err := run.h.Wait()
		l.waitCh <- pointEnd{res: res, err: err}
	}()
	s.win.live = l
	if l.u == nil {
		s.warnf("the %s runner cannot change a running job's limits: every point restarts the job (--windows off)", s.cfg.Runner.Name())
		s.win.off = true
	}
	return s.measureWindow(ctx, pt, l, window{start: run.start}, cell)
}

// runWindow changes the live launch's limits to pt's and measures pt.
func (s *sweep) runWindow(ctx context.Context, pt point) (sensitivity.Cell, error) {
	l := s.win.live
	t0 := time.Now()
	err := l.u.Update(ctx, runner.Limits{CPUs: pt.cpus, MemLimitBytes: s.memLimitFor(pt)})
	if err != nil && ctx.Err() != nil {
		s.endLaunch()
		return sensitivity.Cell{}, errInterrupted
	}
	if err != nil {
		// The job may have ended meanwhile, or the kernel refused: restart.
		s.warnf("%s: changing the running job's limits failed, restarting it: %v", pt.label(), err)
		s.endLaunch()
		return s.startLaunch(ctx, pt)
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress.Note(fmt.Sprintf("%s: in place, launch %d window %d", pt.label(), l.id, l.windows+1))
	}
	cell := sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase,
		Stats: &sensitivity.PointStats{}}
	return s.measureWindow(ctx, pt, l, window{start: s.cfg.Now(), changed: true, t0: unixSeconds(t0)}, cell)
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// window is one point's part of a launch's stream.
type window struct {
	start   time.Time // when the point began (launch or limit change)
	changed bool      // after a limit change (else the launch's first point)
	t0      float64   // the change's time, in the stream's clock (unix s)
	counts  runner.Stats
}

// pick returns the iterations of the window: since (those ending after the
// change, settling included) and win (the measured ones; the first only
// anchors time), and for a launch's first point its first pass.
func (s *sweep) pick(pt point, w window, l *launch, all []jobcontract.Iteration) (since, win, first []jobcontract.Iteration) {
	if !w.changed {
		win, first = s.window(pt, all)
		return all, win, first
	}
	from := len(all)
	for i, it := range all {
		if it.TS >= w.t0 {
			from = i
			break
		}
	}
	since = all[from:]
	a := settleAnchor(all, w.t0, s.settleIterations(l.workers), settleMin.Seconds())
	if a < 0 {
		return since, nil, nil
	}
	return since, all[a:], nil
}

// settleAnchor returns the index of the iteration whose end starts a
// window's measurement after a limit change at t0: the first iteration
// that began after the change (its predecessor ended at or after t0) is
// dropped with the settle-1 after it, and the anchor is moved on until it
// ends at least minS seconds after t0. -1: not there yet.
func settleAnchor(all []jobcontract.Iteration, t0 float64, settle int, minS float64) int {
	first := -1
	for i := 1; i < len(all); i++ {
		if all[i-1].TS >= t0 {
			first = i
			break
		}
	}
	if first < 0 {
		return -1
	}
	a := first + max(settle, 1) - 1
	for a < len(all) && all[a].TS < t0+minS {
		a++
	}
	if a >= len(all) {
		return -1
	}
	return a
}
