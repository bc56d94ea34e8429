package profiler

import (
	"context"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// measureWindow follows the live launch through pt's window and returns
// its cell. A job that ends during the window ends the launch; a
// cancelled context stops it and returns errInterrupted.
func (s *sweep) measureWindow(ctx context.Context, pt point, l *launch, w window, cell sensitivity.Cell) (sensitivity.Cell, error) {
	run, st := l.run, cell.Stats
	st.Launch, st.InPlace, st.Workers = l.id, w.changed, l.workers
	if w.changed {
		if c, err := run.h.Stats(); err == nil {
			w.counts = c
		}
		var err error
		if run.sampling, err = s.startSampling(run.h, pt); err != nil {
			s.warnf("%s: sampling: %v", pt.label(), err)
		}
	}
	stop, interrupted := s.watchWindow(ctx, pt, l, &w)
	if interrupted {
		s.endLaunch()
		return cell, errInterrupted
	}
	s.pollLaunch(pt, l)
	since, win, first := s.pick(pt, w, l, run.m.all)
	view := *run
	view.m = measurement{all: since, window: win, firstPass: first, est: estimate(win)}
	if live, ok := run.sampling.liveStats(); ok {
		view.live = live
	}
	run.sampling.stop(s, st, win)
	run.sampling = nil
	end := pointEnd{stopReason: stop, wall: s.cfg.Now().Sub(w.start).Seconds()}
	if err := s.probeWindow(pt, l, w, stop); err != nil {
		s.endLaunch()
		return cell, err
	}
	after, err := run.h.Stats()
	if l.end != nil {
		end.res, end.err, after, err = l.end.res, l.end.err, l.end.res.Final, nil
		if !s.classifyEnd(pt, &view, end, &cell) {
			s.endLaunch()
			return cell, nil
		}
	}
	st.WallSeconds = end.wall
	if err == nil {
		fillWindowStats(st, w.counts, after, view.live)
	}
	s.measure(pt, &view, end, &cell)
	if n := len(win); n > 1 && cell.Failure == nil {
		st.MeasureSeconds = win[n-1].TS - win[0].TS
	}
	st.WarmupSeconds = max(0, st.WallSeconds-st.MeasureSeconds)
	l.windows++
	if len(run.m.all) == 0 {
		s.warnf("the job wrote no metrics stream: points cannot share a launch (--windows off)")
		s.win.off = true
	}
	if l.end != nil || s.win.off {
		s.endLaunch()
	}
	return cell, nil
}

// watchWindow follows the launch until pt's window has converged or
// reached its iteration cap, the point's time cap passes, the job ends
// (stop ""), or ctx is cancelled.
func (s *sweep) watchWindow(ctx context.Context, pt point, l *launch, w *window) (stop string, interrupted bool) {
	cfg := &s.cfg
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
			return StopTimeCap, false
		case <-ticker.C:
			s.pollLaunch(pt, l)
			_, win, _ := s.pick(pt, *w, l, l.run.m.all)
			est := estimate(win)
			if !sampled && time.Since(lastStats) >= statsEvery {
				lastStats = time.Now()
				if st, err := l.run.h.Stats(); err == nil {
					l.run.live.add(st)
				}
			}
			if cfg.Progress != nil && time.Since(lastUpdate) >= 500*time.Millisecond {
				lastUpdate = time.Now()
				cfg.Progress.PointUpdate(pt.label(), est.Iterations, est, cfg.Now().Sub(w.start))
			}
			if r := s.stopFor(est, s.cfg.MaxIterations); r != "" { // a window is never cold (windowed)
				return r, false
			}
		}
	}
}

// pollLaunch reads the iterations the launch's job appended.
func (s *sweep) pollLaunch(pt point, l *launch) {
	its, err := l.run.tailer.Poll()
	if err != nil {
		s.warnf("%s: reading metrics: %v", pt.label(), err)
		return
	}
	l.run.m.all = append(l.run.m.all, its...)
}

// fillWindowStats records a window's cgroup figures: cumulative counters
// as the difference between the reads at its start (zero for a launch's
// first window) and its end; memory from the window's live samples where
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

// endLaunch stops the live launch, if any, and releases what it holds.
func (s *sweep) endLaunch() {
	l := s.win.live
	if l == nil {
		return
	}
	s.win.live = nil
	if l.end == nil {
		_ = l.run.h.Stop()
		end := <-l.waitCh
		l.end = &end
	}
	if l.end.err != nil && !l.end.res.Stopped {
		s.warnf("launch %d (%s): %v", l.id, l.first.label(), l.end.err)
	}
	if l.run.sampling != nil {
		l.run.sampling.stop(s, &sensitivity.PointStats{}, nil)
		l.run.sampling = nil
	}
	s.keepMetrics(l.first, l.run.metricsPath)
	if t := l.run.tailer; t != nil && t.Bad > 0 {
		s.warnf("launch %d: %d malformed metrics lines", l.id, t.Bad)
	}
	l.run.close()
}
