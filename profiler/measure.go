package profiler

import (
	"context"
	"fmt"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// One way to measure a point: follow the launch's stream from the
// point's anchor until its estimate is tight or a cap is reached, then
// turn what it measured into the cell. A point that began the launch is
// measured from the job's start (its warm-up dropped; under a memory limit
// from its second pass); a point changed in place from the change, after
// settling (a warm point) or after one whole pass since the dataset was
// evicted (a point under a memory limit), over whole passes.

// anchor is where a point begins in its launch's stream.
type anchor struct {
	start   time.Time // wall clock when the point began (launch or change)
	changed bool      // in place, after a change (else the launch's first point)
	// t0 is when the change was in force (Unix seconds, the stream's
	// clock): limits, loader and page cache; ackIter the stream's "iter"
	// of the first batch under the new loader settings (-1: no command).
	t0      float64
	ackIter int
	counts  runner.Stats // the cgroup's counters at the change
	refill  refill       // how the point is measured after the change
}

// Settling after a change: at least settleIterations and settleMin are
// dropped.
const settleMin = 200 * time.Millisecond // two CFS periods

// since returns the iterations of all that belong to the point: all of
// them for a launch's first point; after a change, from the first that
// began after it (and, after a loader command, consumed a batch of the
// new loader).
func (a anchor) since(all []jobcontract.Iteration) []jobcontract.Iteration {
	if !a.changed {
		return all
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].TS >= a.t0 && all[i].Iter >= a.ackIter {
			return all[i:]
		}
	}
	return nil
}

// maxHeldIterations bounds the iterations of a launch's stream the
// profiler holds (about 100 bytes each, 26 MiB in all): more than any
// point's window, warm-up and first pass need at the default caps. Past
// it, iterations from before the point being measured are dropped; a
// point whose own part reaches it stops there (as at its iteration cap).
// With one Poll's lines (jobcontract.MaxPollBytes) it bounds what the
// profiler keeps of a job's metrics, however fast the job writes.
const maxHeldIterations = 1 << 18

// hold appends the iterations read to the launch's stream, within
// maxHeldIterations.
func (l *launch) hold(its []jobcontract.Iteration) {
	all := l.run.m.all
	if len(all)+len(its) > maxHeldIterations {
		// Keep from the last iteration before the point's beginning.
		k := 0
		for k < len(all)-1 && all[k+1].TS < l.from {
			k++
		}
		if k > 0 {
			n := copy(all, all[k:])
			clear(all[n:])
			all = all[:n]
		}
	}
	if room := maxHeldIterations - len(all); len(its) > room {
		its, l.full = its[:max(room, 0)], true
	}
	l.run.m.all = append(all, its...)
}

// measureIn follows the launch l through pt's part of its stream and
// returns pt's cell. A job that ends during it ends the launch; a
// cancelled context stops it and returns errInterrupted.
func (s *launcher) measureIn(ctx context.Context, pt point, l *launch, a anchor, cell sensitivity.Cell) (sensitivity.Cell, error) {
	if !a.changed {
		pt = l.first // with the launch's worker count and iteration cap
	}
	run, st := l.run, cell.Stats
	st.Launch, st.InPlace, st.Workers = l.id, a.changed, l.workers
	l.from, l.full = 0, false
	if a.changed {
		l.from = a.t0
	}
	if a.changed {
		var err error
		if run.sampling, err = s.startSampling(run.h, pt); err != nil {
			s.rec.warnf("%s: sampling: %v", pt.label(), err)
		}
	}
	stop, interrupted := s.watchPoint(ctx, pt, l, a)
	if interrupted {
		s.endLaunch("")
		return cell, errInterrupted
	}
	s.pollLaunch(pt, l)
	s.noteUsed(l, pt, st)
	a.refill.logLines = run.fromLog
	since, win, first := s.meter.pick(pt, a, run.m.all)
	view := *run
	view.m = measurement{all: since, window: win, firstPass: first, est: estimate(win), rf: a.refill}
	if live, ok := run.sampling.liveStats(); ok {
		view.live = live
	}
	run.sampling.stop(s.rec, st, win)
	run.sampling = nil
	s.keepPointMetrics(pt, since)
	// The counters at the point's end: the cgroup sampler's last read, the
	// point's one reader of them where there is one.
	after, err := view.live.last, error(nil)
	if view.live.n == 0 {
		after, err = run.h.Stats()
	}
	end := pointEnd{stopReason: stop, wall: s.deps.Now().Sub(a.start).Seconds()}
	if l.end != nil {
		end.res, end.err = l.end.res, l.end.err
	}
	if !a.changed {
		if err := s.applyProbe(pt, s.readProbe(pt, run), end); err != nil {
			s.endLaunch("")
			return cell, err
		}
	}
	if l.end != nil {
		after, err = l.end.res.Final, nil
		if !s.meter.classifyEnd(pt, &view, end, &cell) {
			s.noteCrashAtStart(pt, l, a, cell)
			s.endLaunch(endedHow(*l.end, l.limits.MemLimitBytes, "at "+pt.label()))
			return cell, nil
		}
	}
	st.WallSeconds = end.wall
	if err == nil {
		fillWindowStats(st, a.counts, after, view.live)
		st.ExitCode = end.res.ExitCode
	}
	s.meter.measure(pt, &view, end, &cell)
	if n := len(win); n > 1 && cell.Failure == nil {
		st.MeasureSeconds = win[n-1].TS - win[0].TS
	}
	st.MeasureSeconds = min(st.MeasureSeconds, st.WallSeconds)
	st.WarmupSeconds = max(0, st.WallSeconds-st.MeasureSeconds)
	l.points++
	switch {
	case l.end != nil:
		s.endLaunch(endedHow(*l.end, l.limits.MemLimitBytes, "at "+pt.label()))
	case l.synthetic:
		s.endLaunch(whySynthetic)
	case len(run.m.all) == 0:
		s.endLaunch(whyNoStream)
	}
	return cell, nil
}

// endedHow says how a launch's job ended (its end, under the memory
// limit memLimit) when something happened to it — "at" a point's
// measurement, "while" a move — so that the relaunch says why the launch
// cannot serve the next point: an OOM kill names the limit.
func endedHow(end pointEnd, memLimit int64, when string) string {
	switch {
	case end.err != nil:
		return fmt.Sprintf("the runner failed %s: %v", when, end.err)
	case end.res.OOMKilled:
		return fmt.Sprintf("the job was OOM-killed under its memory limit of %s %s", units.FormatMemLimit(memLimit), when)
	}
	return fmt.Sprintf("the job ended %s %s", exitText(end.res), when)
}

// watchPoint follows the launch until pt's estimate is tight or at its
// iteration cap, pt's time cap passes, the job ends (stop ""), or ctx is
// cancelled. It reports progress and, where no cgroup sampler reads the
// job's counters, polls them.
func (s *launcher) watchPoint(ctx context.Context, pt point, l *launch, a anchor) (stop string, interrupted bool) {
	cfg := s.cfg
	ticker := time.NewTicker(cfg.Poll)
	defer ticker.Stop()
	deadline := time.NewTimer(cfg.PointTimeout)
	defer deadline.Stop()
	_, sampled := l.run.sampling.liveStats()
	var lastUpdate, lastStats time.Time
	for {
		select {
		case end := <-l.waitCh:
			l.end = &end
			// A job killed because ctx was cancelled is an interruption,
			// not a crash.
			return "", ctx.Err() != nil
		case <-ctx.Done():
			return "", true
		case <-deadline.C:
			return sensitivity.PointStopTimeCap, false
		case <-ticker.C:
			s.pollLaunch(pt, l)
			a.refill.logLines = l.run.fromLog
			since, win, _ := s.meter.pick(pt, a, l.run.m.all)
			est := estimate(win)
			if !sampled && time.Since(lastStats) >= statsEvery {
				lastStats = time.Now()
				if st, err := l.run.h.Stats(); err == nil {
					l.run.live.add(st)
				}
			}
			if s.deps.Progress != nil && time.Since(lastUpdate) >= 500*time.Millisecond {
				lastUpdate = time.Now()
				est.Waiting = s.waitingFor(pt, l, a, since, est)
				s.deps.Progress.PointUpdate(pt.label(), est.Iterations, est, s.deps.Now().Sub(a.start))
			}
			if r := s.meter.stopForPoint(pt, since, a.refill, est); r != "" {
				return r, false
			}
			if l.full {
				return sensitivity.PointStopIterCap, false
			}
		}
	}
}

// fillWindowStats records a point's cgroup figures: cumulative counters
// as the difference between the reads at its start (zero for a launch's
// first point) and its end; memory from the point's live samples where
// there were any, else the end read; the peak is the launch's so far.
func fillWindowStats(st *sensitivity.PointStats, before, after runner.Stats, live liveStats) {
	st.CPUUsageSeconds = after.CPUUsageSeconds - before.CPUUsageSeconds
	st.CPUThrottledPeriods = after.CPUThrottledPeriods - min(before.CPUThrottledPeriods, after.CPUThrottledPeriods)
	st.CPUThrottledSeconds = after.CPUThrottledSeconds - before.CPUThrottledSeconds
	st.IOReadBytes = after.IOReadBytes - before.IOReadBytes
	st.MemPeakBytes = after.MemPeakBytes
	st.MemCacheBytes, st.MemAnonBytes = after.MemCacheBytes, after.MemAnonBytes
	if live.n > 0 {
		st.MemCacheBytes, st.MemAnonBytes = live.last.MemCacheBytes, live.anonPeak
		st.MemPeakBytes = max(st.MemPeakBytes, live.last.MemPeakBytes)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// waitingFor says what a running point waits for ("" when it measures).
func (s *launcher) waitingFor(pt point, l *launch, a anchor, since []jobcontract.Iteration, est Estimate) string {
	switch {
	case len(since) == 0 && len(l.run.m.all) == 0 && s.cfg.ProgressRegex != "":
		return fmt.Sprintf("waiting for the job's first iteration: no metrics stream yet, and no line of its output matched --progress-regex %q", s.cfg.ProgressRegex)
	case len(since) == 0 && len(l.run.m.all) == 0 && s.tmpl.used[PlaceholderIterations]:
		return "waiting for the job to end: it writes no metrics stream, so it is measured over the {iterations} it was given"
	case len(since) == 0 && len(l.run.m.all) == 0:
		return "waiting for the job's first iteration: no metrics stream yet (start-up; a job that never writes one is refused: --progress-regex)"
	case len(since) == 0:
		return "waiting for the first iteration under the point's settings"
	case est.Iterations == 0 && pt.cold:
		return "waiting for the page cache to refill: measuring starts a pass after the dataset's eviction"
	case est.Iterations == 0:
		return fmt.Sprintf("waiting out the warm-up (%d iterations after a start or change)", s.meter.warmup(a.refill))
	case s.meter.footprintPass(pt) && reportsEpochs(since) && !crossesPass(since):
		return "running to the end of the job's pass and what follows it (its evaluation): the memory axis is fitted to that peak"
	}
	return ""
}
