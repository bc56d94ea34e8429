package profiler

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// A profile is one launch of the job (docs/cost.md, "One launch"): the
// launch started for the first point serves every later point it can,
// changed in place — its cgroup's limits through the runner
// (runner.Updater), its loader's workers and replay through the control
// channel (control.go), the dataset's page cache through the Cache. A
// point the running launch cannot serve (move.go, cannotServe) ends it,
// and the next launch's reason is recorded in the profile's cost block.

// launch is one run of the job, serving consecutive points.
type launch struct {
	id    int
	first point // the point it was started for: names its stream and logs
	run   *pointRun
	u     runner.Updater // nil: the runner cannot change its limits
	ctl   *control
	// waitCh receives how the job ended; ended is closed then, and end
	// set by the sweep once it read waitCh.
	waitCh chan pointEnd
	ended  chan struct{}
	end    *pointEnd
	// What is in force now.
	limits  runner.Limits
	workers int
	replay  bool
	// dataDir is the data it reads (the dataset, or its sample for scaled
	// memory points); synthetic: started for the step-only run (fed
	// synthetic data, or replaying by the probe's environment).
	dataDir   string
	synthetic bool
	points    int // points it measured
	// readCold: a point under a memory limit read the dataset into the
	// job's own cgroup, whose page cache a warm point must not count.
	readCold  bool
	startupOK bool
}

// launchIterations is the --max-iterations a launch is given: enough for
// every cell of the grid, each after its settling and, under a memory
// limit, its first passes, with its cap; the sweep stops the job long
// before that. A job that reports nothing (measured by its wall time) runs
// one point: its cap is that point's own (maxIterationsFor).
func (s *sweep) launchIterations(pt point) int {
	per := s.cfg.MaxIterations + s.settleIterations(Workers(pt.cpus, s.cfg.GPUs)) + 1
	if ipe := s.itersPerEpochAt(pt); ipe > 0 {
		per = max(per, 3*ipe+s.capFor(mkPoint(pt.cpus, 1, "")))
	}
	cells := len(s.prof.Axes.CPUs)*len(s.prof.Axes.MemLimitBytes) + 2
	return s.cfg.Warmup + per*cells
}

// settleIterations is how many whole iterations after a change are
// dropped: the warm-up count, and at least the loader's prefetch queue (2
// batches per worker, PyTorch's default prefetch_factor), which was filled
// at the old settings and drains first.
func (s *sweep) settleIterations(workers int) int { return max(s.cfg.Warmup, 2*workers) }

// startLaunch starts the job for pt, its first point: at pt's limits and
// loader workers, with the launch's iteration cap.
func (s *sweep) startLaunch(ctx context.Context, pt point) (*launch, error) {
	pt.launchWorkers = Workers(pt.cpus, s.cfg.GPUs)
	if !pt.synthetic {
		pt.launchIters = s.launchIterations(pt)
	}
	run, err := s.prepare(pt)
	if err != nil {
		return nil, err
	}
	ctl := newControl(run.metricsDir)
	s.prof.Cost.Launches++
	if s.relaunchWhy != "" {
		if len(s.prof.Cost.Relaunches) < maxRelaunchNotes {
			s.prof.Cost.Relaunches = append(s.prof.Cost.Relaunches,
				fmt.Sprintf("launch %d (%s): %s", s.prof.Cost.Launches, pt.label(), s.relaunchWhy))
		}
		if s.cfg.Progress != nil {
			s.cfg.Progress.Note(fmt.Sprintf("%s: relaunching the job: %s", pt.label(), s.relaunchWhy))
		}
		s.relaunchWhy = ""
	}
	if err := s.launchJob(ctx, pt, run, ctl.env()); err != nil {
		run.close()
		return nil, err
	}
	l := &launch{id: s.prof.Cost.Launches, first: pt, run: run, u: runner.AsUpdater(run.h), ctl: ctl,
		waitCh: make(chan pointEnd, 1), ended: make(chan struct{}),
		limits: s.limitsFor(pt), workers: pt.launchWorkers, dataDir: s.dataDirFor(pt), synthetic: pt.synthetic, readCold: pt.cold}
	go func() {
		res, err := run.h.Wait()
		l.waitCh <- pointEnd{res: res, err: err}
		close(l.ended)
	}()
	s.live = l
	return l, nil
}

// maxRelaunchNotes bounds Cost.Relaunches.
const maxRelaunchNotes = 64

// limitsFor are a point's cgroup limits.
func (s *sweep) limitsFor(pt point) runner.Limits {
	return runner.Limits{CPUs: pt.cpus, MemLimitBytes: s.memLimitFor(pt), ReadBPS: s.cfg.ReadBPS, ReadBPSPath: s.cfg.DataDir}
}

// launchJob starts the job with the point's limits, the contract's flags
// and environment (and the control channel's), then its sampling.
func (s *sweep) launchJob(ctx context.Context, pt point, run *pointRun, ctlEnv []string) error {
	cfg := &s.cfg
	out := io.Writer(run.tail)
	if run.log != nil {
		out = io.MultiWriter(&cappedWriter{w: run.log, left: MaxPointLogBytes}, run.tail)
	}
	job := runner.Job{
		Name:       cfg.JobName,
		Argv:       s.argv(pt),
		Env:        append(s.jobEnv(pt, run), ctlEnv...),
		Stdout:     out,
		Stderr:     out,
		Limits:     s.limitsFor(pt),
		DataDir:    s.dataDirFor(pt),
		MetricsDir: run.metricsDir,
		ProbeDir:   s.probeDir,
	}
	run.start = cfg.Now()
	h, err := cfg.Runner.Start(ctx, job)
	if err != nil {
		return err
	}
	run.h = h
	if run.sampling, err = s.startSampling(h, pt); err != nil {
		s.warnf("%s: sampling: %v", pt.label(), err)
	}
	run.tailer = jobcontract.NewTailer(run.metricsPath)
	return nil
}

// poll reads the iterations the launch's job appended and its control
// answers; the first iteration's time closes the launch's start-up.
func (s *sweep) pollLaunch(pt point, l *launch) {
	its, err := l.run.tailer.Poll()
	if err != nil {
		s.warnf("%s: reading metrics: %v", pt.label(), err)
		return
	}
	l.run.m.all = append(l.run.m.all, its...)
	if !l.startupOK && len(l.run.m.all) > 0 {
		l.startupOK = true
		if st := l.run.m.all[0].TS - unixSeconds(l.run.start); st > 0 {
			s.prof.Cost.StartupSeconds += st
		}
	}
	l.ctl.poll()
}

// endLaunch stops the live launch, if any, and releases what it holds;
// why, when not empty, is recorded as the reason of the next launch.
func (s *sweep) endLaunch(why string) {
	l := s.live
	if l == nil {
		return
	}
	s.live = nil
	s.relaunchWhy = why
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
	if t := l.run.tailer; t != nil && t.Bad > 0 {
		s.keepMetrics(fmt.Sprintf("launch%d.raw-metrics.jsonl", l.id), l.first.label(), l.run.metricsPath)
		if t.Broken(len(l.run.m.all)) == "" {
			s.warnf("launch %d (%s): %d malformed metrics lines (first: %s)", l.id, l.first.label(), t.Bad, strings.Join(t.Errors, "; "))
		}
	}
	l.run.close()
}
