package profiler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// cannotServe says why the live launch cannot measure pt in place, or ""
// when it can.
func (s *launcher) cannotServe(l *launch, pt point) string {
	select {
	case end := <-l.waitCh:
		l.end = &end
	default:
	}
	listening := l.ctl.listening()
	s.noteHello(l)
	workers, threads := s.wantWorkers(l, pt), s.wantThreads(l, pt)
	switch {
	case s.cfg.Relaunch:
		return "--relaunch: a launch per point"
	case l.end != nil && l.end.res.OOMKilled:
		return "the job was OOM-killed at the point before"
	case l.end != nil:
		return fmt.Sprintf("the job ended (%s)", exitText(l.end.res))
	case l.synthetic:
		return whySynthetic
	case len(l.run.m.all) == 0:
		return whyNoStream
	case s.data.dataDirFor(pt) != l.dataDir && s.data.scaledPoint(pt):
		return "the point reads a sample of the dataset (--mem-scale)"
	case s.data.dataDirFor(pt) != l.dataDir:
		return "the point reads the whole dataset, the launch its sample (--mem-scale)"
	case l.u == nil && !sameLimits(s.limitsFor(pt), l.limits):
		return fmt.Sprintf("the %s runner cannot change a running job's limits", s.deps.Runner.Name())
	case (workers != l.workers || threads != l.threads || pt.synthetic) && !listening:
		why := "the job does not answer the control channel (no DataLoader probe or contract helper listening)"
		if l.ctl.broken != "" {
			why = "the job's control channel failed: " + l.ctl.broken
		}
		switch {
		case pt.synthetic:
			return why + ", so it cannot replay a batch in place"
		case !l.helloSeen:
			return fmt.Sprintf("%s, so what a launch at %g cores sets (%d threads, %d loader workers) cannot be set in place", why, pt.cpus, threads, workers)
		case workers != l.workers:
			return fmt.Sprintf("%s, so its %d loader workers cannot become %d", why, l.workers, workers)
		}
		return fmt.Sprintf("%s, so its %d threads (%s) cannot become %d in place", why, l.threads, ThreadEnv[0], threads)
	}
	return ""
}

// noteHello takes in the job's hello once it said it: the loader's
// workers and the threads it runs with. A count the launch did not set
// is the job's own (a loader built with num_workers=0 stays in-process, as
// the probe keeps it at every launch; a script that sets its threads
// itself): a fresh launch at any point would get it too, so it is left
// as it is.
func (s *launcher) noteHello(l *launch) {
	h := l.ctl.hello
	if l.helloSeen || h == nil {
		return
	}
	l.helloSeen = true
	l.usedWorkers, l.usedThreads = h.Workers, h.Threads
	l.ownWorkers = h.Workers != l.workers
	switch {
	case h.Threads == 0:
		l.noThreads = true // a job whose threads no variable sets (synthtrain)
	case h.Threads != l.threads:
		l.ownThreads = true
	}
}

// wantWorkers is the loader workers a fresh launch at pt would run: the
// point's, unless the job's loader keeps its own count (noteHello).
func (s *launcher) wantWorkers(l *launch, pt point) int {
	if l.ownWorkers {
		return l.workers
	}
	return Workers(pt.cpus, s.cfg.GPUs)
}

// wantThreads is the intra-op threads a fresh launch at pt would run:
// the point's cores (ThreadEnv), unless the user set the variables
// (--env), the job sets its own, or it reports none.
func (s *launcher) wantThreads(l *launch, pt point) int {
	if l.ownThreads || l.noThreads || s.userThreads() {
		return l.threads
	}
	return threads(pt.cpus)
}

// userThreads reports whether the user's environment (Config.Env) sets
// one of ThreadEnv: every launch then has the user's count.
func (s *launcher) userThreads() bool {
	for _, kv := range s.cfg.Env {
		for _, k := range ThreadEnv {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
	}
	return false
}

// Why a launch serves no more points, said at its end (measureIn) and
// checked again before the next point (cannotServe).
const (
	whySynthetic = "the step-only run's launch was fed synthetic data"
	whyNoStream  = "the job wrote no metrics stream, so its points are measured by wall time, one launch each"
)

// errRelaunch wraps why a change in place failed: the job is relaunched
// for the point.
type errRelaunch struct{ why string }

func (e errRelaunch) Error() string { return e.why }

// move changes the live launch to pt: its limits (lowering memory
// reclaims page cache down to the new limit), its loader's workers and
// replay over the control channel, then the dataset's page cache (evicted
// for a point under a memory limit, warm otherwise). The job starts its
// new loader workers before it stops the old ones, and for those moments
// holds both, which a memory limit sized to one set can OOM-kill: so a
// worker change under a limit runs with the limit raised to the host's
// memory (swapMemLimit), and a lower limit is set only after the loader
// changed. Nothing is measured before pt's limit is set and, under a
// limit, the dataset evicted and refilled. It returns the point's anchor:
// when and from which iteration pt's settings hold.
func (s *launcher) move(ctx context.Context, l *launch, pt point, st *sensitivity.PointStats) (anchor, error) {
	a := anchor{start: s.deps.Now(), changed: true, ackIter: -1}
	want := s.limitsFor(pt)
	first := want
	swap := s.wantWorkers(l, pt) != l.workers && !pt.synthetic
	switch {
	case swap && l.limits.MemLimitBytes > 0:
		first.MemLimitBytes = s.swapMemLimit(l.limits, want)
	case lowersMemory(l.limits, want):
		first.MemLimitBytes = l.limits.MemLimitBytes
	}
	if err := s.setLimits(ctx, l, first); err != nil {
		return a, err
	}
	if err := s.changeLoader(ctx, l, pt, &a); err != nil {
		return a, err
	}
	if err := s.setLimits(ctx, l, want); err != nil {
		return a, err
	}
	l.last = pt
	if !pt.cold && l.readCold && s.deps.Cache != nil && s.cfg.DataDir != "" && !pt.synthetic {
		// The cold point before read the dataset into the job's cgroup:
		// evicted, it is warmed again by the profiler (prepareCache), as
		// for a new launch, so the job's page cache is its own again.
		if _, err := s.deps.Cache.Evict(l.dataDir); err != nil {
			return a, fmt.Errorf("evict dataset before %s: %w", pt.label(), err)
		}
		l.readCold = false
	}
	if err := s.prepareCache(pt, st); err != nil {
		return a, err
	}
	l.readCold = l.readCold || pt.cold
	a.t0 = unixSeconds(time.Now())
	if c, err := l.run.h.Stats(); err == nil {
		a.counts = c
	}
	a.refill = refill{inPlace: true}
	if pt.cold {
		var anon int64
		if a.counts.Has&runner.StatMemAnon != 0 {
			anon = a.counts.MemAnonBytes
		}
		a.refill.passLen = s.meter.passLength(pt, l.run.m.all)
		if n := s.probeLoaderLen(l); n > 0 {
			a.refill.passLen = n // the loader's own length, not a guess from files and batch
		}
		a.refill.need = s.meter.refillIterations(pt, a.refill.passLen, anon)
	}
	return a, nil
}

// setLimits changes the live launch's limits to want, where they differ.
func (s *launcher) setLimits(ctx context.Context, l *launch, want runner.Limits) error {
	if sameLimits(want, l.limits) {
		return nil
	}
	if err := l.u.Update(ctx, runner.Limits{CPUs: want.CPUs, MemLimitBytes: want.MemLimitBytes}); err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		if why := s.endedDuring(l, "its limits changed"); why != "" {
			return errRelaunch{why}
		}
		// The kernel refused.
		return errRelaunch{"changing the running job's limits failed: " + err.Error()}
	}
	l.limits = want
	return nil
}

// swapMemLimit is the memory limit a worker change runs under when the
// launch has one: the host's memory (a finite limit: the Docker Engine
// cannot lift one), and never below the limits before and after; none
// where the host's memory is not known.
func (s *launcher) swapMemLimit(old, want runner.Limits) int64 {
	dram := s.deps.Host.DRAMBytes
	if dram <= 0 {
		return 0
	}
	return max(dram, old.MemLimitBytes, want.MemLimitBytes)
}

// lowersMemory says whether going from limits old to want lowers the
// memory limit (0 is none).
func lowersMemory(old, want runner.Limits) bool {
	return want.MemLimitBytes > 0 && (old.MemLimitBytes <= 0 || want.MemLimitBytes < old.MemLimitBytes)
}

// changeLoader asks the job over the control channel for pt's loader
// workers and replay, where they differ from the launch's, and sets a's
// iteration from its answer.
func (s *launcher) changeLoader(ctx context.Context, l *launch, pt point, a *anchor) error {
	s.noteHello(l)
	workers, threads, replay := s.wantWorkers(l, pt), s.wantThreads(l, pt), pt.synthetic
	var cmd jobcontract.ControlCommand
	if replay != l.replay {
		cmd.Replay = &replay
	}
	if workers != l.workers && !replay { // replaying, the loader is idle: its workers change on the way back
		cmd.Workers = &workers
	}
	if threads != l.threads {
		cmd.Threads = &threads
	}
	if cmd.Replay == nil && cmd.Workers == nil && cmd.Threads == nil {
		return nil
	}
	ack, err := l.ctl.do(ctx, cmd, s.cfg.Poll, l.ended)
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case err != nil:
		what := "it replayed a batch"
		switch {
		case cmd.Workers != nil:
			what = fmt.Sprintf("its %d loader workers became %d", l.workers, workers)
		case cmd.Threads != nil:
			what = fmt.Sprintf("its %d threads became %d", l.threads, threads)
		}
		if why := s.endedDuring(l, what); why != "" {
			return errRelaunch{why}
		}
		return errRelaunch{"the job did not change its loader in place: " + err.Error()}
	}
	if cmd.Workers != nil && ack.Workers != workers {
		return errRelaunch{fmt.Sprintf("the job answered with %d loader workers, not the %d asked", ack.Workers, workers)}
	}
	if cmd.Threads != nil && ack.Threads != threads {
		return errRelaunch{fmt.Sprintf("the job answered with %d threads, not the %d asked", ack.Threads, threads)}
	}
	if cmd.Workers != nil {
		l.workers = workers
	}
	if cmd.Threads != nil {
		l.threads = threads
	}
	l.usedWorkers, l.usedThreads = ack.Workers, ack.Threads
	l.replay = ack.Replay
	a.ackIter = ack.Iter
	return nil
}

// endedDuring says how the launch's job ended while what was being done
// to it ("" if it is still running after a poll and a second).
func (s *launcher) endedDuring(l *launch, what string) string {
	if l.end == nil {
		select {
		case end := <-l.waitCh:
			l.end = &end
		case <-time.After(s.cfg.Poll + time.Second):
			return ""
		}
	}
	return endedHow(*l.end, l.limits.MemLimitBytes, "while "+what)
}

// measurePointAt measures pt in the live launch, changed in place, or in
// a new launch when the live one cannot serve it.
func (s *launcher) measurePointAt(ctx context.Context, pt point) (sensitivity.Cell, error) {
	if l := s.live; l != nil {
		if why := s.cannotServe(l, pt); why != "" {
			s.endLaunch(why)
		}
	}
	if ctx.Err() != nil {
		return sensitivity.Cell{}, errInterrupted
	}
	if l := s.live; l != nil {
		cell := s.newCell(pt)
		cell.Stats.InPlace = true
		a, err := s.move(ctx, l, pt, cell.Stats)
		var rl errRelaunch
		switch {
		case errors.As(err, &rl):
			s.rec.warnf("%s: %s; relaunching the job", pt.label(), rl.why)
			s.endLaunch(rl.why)
		case err != nil:
			s.endLaunch("")
			return cell, err
		default:
			return s.measureIn(ctx, pt, l, a, cell)
		}
	}
	cell := s.newCell(pt)
	if err := s.prepareCache(pt, cell.Stats); err != nil {
		return cell, err
	}
	l, err := s.startLaunch(ctx, pt)
	if err != nil {
		if ctx.Err() != nil {
			return cell, errInterrupted
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailStartFailed, Message: err.Error()}
		return cell, nil
	}
	return s.measureIn(ctx, pt, l, anchor{start: l.run.start, ackIter: -1}, cell)
}

// newCell is pt's cell before it is measured.
func (s *launcher) newCell(pt point) sensitivity.Cell {
	return sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase,
		Stats: &sensitivity.PointStats{Workers: Workers(pt.cpus, s.cfg.GPUs), ColdStart: pt.cold}}
}

// sameLimits reports whether a and b set the same CPU budget and memory
// limit (the read limit never changes in a launch).
func sameLimits(a, b runner.Limits) bool {
	return a.CPUs == b.CPUs && a.MemLimitBytes == b.MemLimitBytes
}

// noteUsed records in st what the job said it runs with (its hello, or its
// answer to the point's command): the measured loader's worker processes
// and its threads. Nothing where it said nothing.
func (s *launcher) noteUsed(l *launch, pt point, st *sensitivity.PointStats) {
	s.noteHello(l)
	if !l.helloSeen {
		return
	}
	if l.ownWorkers {
		// The count a launch at pt would be given (stats.workers), as in a
		// launch of its own; what the job ran is workers_used.
		st.Workers = Workers(pt.cpus, s.cfg.GPUs)
	}
	w := l.usedWorkers
	st.WorkersUsed, st.Threads = &w, l.usedThreads
}
