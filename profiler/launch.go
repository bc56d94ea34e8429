package profiler

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/owner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// A profile is one launch of the job (docs/cost.md, "One launch"): the
// launch started for the first point serves every later point it can,
// changed in place — its cgroup's limits through the runner
// (runner.Updater), its loader's workers and replay through the control
// channel (control.go), the dataset's page cache through the Cache. A
// point the running launch cannot serve (move.go, cannotServe) ends it,
// and the next launch's reason is recorded in the profile's cost block.

// launcher runs the job: it starts launches, changes the live one in
// place for a point or ends it, follows a point through its stream, and
// keeps the job's files (its work directory, logs, timeline, probe).
type launcher struct {
	cfg   *Config
	deps  *Deps
	rec   *recorder
	data  *dataset
	meter *meter
	jobState
	// workDir is the run's own directory (points' metrics, the probe, the
	// sample); logs and timeline are LogDir and TimelineDir, opened
	// without following a symlink; every file in them is made afresh
	// through them (internal/safefile). nil when not kept.
	workDir        string
	logs, timeline *safefile.Dir
	live           *launch // the running launch, if any
	// relaunchWhy is why the next launch is needed: recorded with it.
	relaunchWhy string
	// noLoader: the probe saw no DataLoader batch in a launch (its
	// replay would replay nothing); stepOnlySkipped: said so once.
	noLoader, stepOnlySkipped bool
	// crashedAtStart, once set, says how the job crashed before its first
	// iteration with nothing measured yet: the sweep stops (sweep.runOne).
	crashedAtStart string
}

// noteCrashAtStart sets crashedAtStart when pt's launch crashed by itself
// before its first iteration with no memory limit, before any point was
// measured: a crash no limit caused, which every launch would repeat.
func (s *launcher) noteCrashAtStart(pt point, l *launch, a anchor, cell sensitivity.Cell) {
	f := cell.Failure
	if f == nil || f.Class != sensitivity.FailCrashed || a.changed || len(l.run.m.all) > 0 || l.limits.MemLimitBytes > 0 ||
		len(s.rec.prof.MeasuredOK()) > 0 || (l.end != nil && l.end.err != nil) {
		return
	}
	s.crashedAtStart = fmt.Sprintf("the job crashed before its first iteration at %s, with no memory limit: %s; "+
		"every point would crash alike, so the profile stops after this one launch (the script's whole output: %s)",
		pt.label(), f.Message, s.logHint(pt))
}

// logHint says where a point's output is kept.
func (s *launcher) logHint(pt point) string {
	if s.cfg.LogDir == "" {
		return "give --log-dir to keep it"
	}
	return filepath.Join(s.cfg.LogDir, pt.fileLabel()+".log")
}

// launch is one run of the job, serving consecutive points.
type launch struct {
	id    int
	first point // the point it was started for: names its stream and logs
	// last is the point it was moved to last (first until a move): names
	// the probe's report kept at its end, which says how the job ran there.
	last point
	run  *pointRun
	u    runner.Updater // nil: the runner cannot change its limits
	ctl  *control
	// waitCh receives how the job ended; ended is closed then, and end
	// set by the sweep once it read waitCh.
	waitCh chan pointEnd
	ended  chan struct{}
	end    *pointEnd
	// What is in force now.
	limits  runner.Limits
	workers int
	replay  bool
	// threads is the intra-op thread count in force: the launch's
	// (ThreadEnv), then what the job answered.
	threads int
	// What the job said over the control channel (its hello, then each
	// answer): its loader's workers and its threads as it runs them.
	// ownWorkers/ownThreads: the hello showed a count the launch did not
	// set (an in-process loader, a count the script sets itself), which a
	// fresh launch at any point would get too, so it is left alone;
	// noThreads: the job reports no threads, so none are sent.
	helloSeen              bool
	usedWorkers            int
	usedThreads            int
	ownWorkers, ownThreads bool
	noThreads              bool
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
	// from is when the point being measured began (its anchor's t0; 0 for
	// the launch's first): what came before may go (hold). full: the
	// point's stream reached maxHeldIterations, and it stops.
	from float64
	full bool
}

// maxRelaunchNotes bounds Cost.Relaunches.
const maxRelaunchNotes = 64

// limitsFor are a point's cgroup limits.
func (s *launcher) limitsFor(pt point) runner.Limits {
	return runner.Limits{CPUs: pt.cpus, MemLimitBytes: s.data.memLimitFor(pt), ReadBPS: s.cfg.ReadBPS, ReadBPSPath: s.cfg.DataDir}
}

// launchJob starts the job with the point's limits, the contract's flags
// and environment (and the control channel's), then its sampling.
func (s *launcher) launchJob(ctx context.Context, pt point, run *pointRun, ctlEnv []string) error {
	cfg := s.cfg
	out := io.Writer(run.tail)
	if run.log != nil {
		out = io.MultiWriter(&cappedWriter{w: run.log, left: MaxPointLogBytes}, run.tail)
	}
	if s.progressRE != nil {
		run.progress = newProgressScanner(s.progressRE, cfg.Batch, time.Now)
		out = io.MultiWriter(out, run.progress)
	}
	job := runner.Job{
		Name:       cfg.JobName,
		Argv:       s.argv(pt),
		Dir:        s.jobDir,
		Env:        append(s.jobEnv(pt, run), ctlEnv...),
		Stdout:     out,
		Stderr:     out,
		Limits:     s.limitsFor(pt),
		DataDir:    s.data.dataDirFor(pt),
		MetricsDir: run.metricsDir,
		ProbeDir:   s.probeDir,
	}
	run.start = s.deps.Now()
	h, err := s.deps.Runner.Start(ctx, job)
	if err != nil {
		return err
	}
	run.h = h
	if run.sampling, err = s.startSampling(h, pt); err != nil {
		s.rec.warnf("%s: sampling: %v", pt.label(), err)
	}
	run.tailer = jobcontract.NewTailer(run.metricsPath)
	return nil
}

// poll reads the iterations the launch's job appended and its control
// answers; the first iteration's time closes the launch's start-up.
func (s *launcher) pollLaunch(pt point, l *launch) {
	its, err := l.run.tailer.Poll()
	if err != nil {
		s.rec.warnf("%s: reading metrics: %v", pt.label(), err)
		return
	}
	// The job's log lines count its iterations (progress.go) while it
	// writes no stream of its own: the first source to say anything is the
	// launch's.
	switch logged := l.run.progress.take(); {
	case len(its) > 0 && !l.run.fromLog:
	case len(logged) > 0 && len(l.run.m.all) == 0, len(logged) > 0 && l.run.fromLog:
		l.run.fromLog = true
		its = logged
	default:
		its = nil
	}
	l.hold(its)
	if !l.startupOK && len(l.run.m.all) > 0 {
		l.startupOK = true
		if st := l.run.m.all[0].TS - unixSeconds(l.run.start); st > 0 {
			s.rec.prof.Cost.StartupSeconds += st
		}
	}
	l.ctl.poll()
}

// endLaunch stops the live launch, if any, and releases what it holds;
// why, when not empty, is recorded as the reason of the next launch.
func (s *launcher) endLaunch(why string) {
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
		s.rec.warnf("launch %d (%s): %v", l.id, l.first.label(), l.end.err)
	}
	if l.run.sampling != nil {
		l.run.sampling.stop(s.rec, &sensitivity.PointStats{}, nil)
		l.run.sampling = nil
	}
	// One report a launch is kept: its last, named for the point it was
	// read at (its loader's affinity is that point's).
	s.probeBody(l.last, l.run, false, true)
	if t := l.run.tailer; t != nil && t.Bad > 0 {
		s.keepMetrics(fmt.Sprintf("launch%d.raw-metrics.jsonl", l.id), l.first.label(), l.run.metricsPath)
		// The launch's good lines: its hold may have dropped some.
		if t.Broken(t.Lines-t.Bad) == "" {
			s.rec.warnf("launch %d (%s): %d malformed metrics lines (first: %s)", l.id, l.first.label(), t.Bad, strings.Join(t.Errors, "; "))
		}
	}
	l.ctl.close()
	l.run.close()
}

// prepare makes the point's metrics directory and opens its log.
func (s *launcher) prepare(pt point) (*pointRun, error) {
	dir, err := os.MkdirTemp(s.workDir, "point-*")
	if err != nil {
		return nil, err
	}
	run := &pointRun{metricsDir: dir, metricsPath: filepath.Join(dir, "metrics.jsonl"), tail: &tailBuffer{max: 4096}}
	if s.logs != nil {
		if run.log, err = s.logs.Create(pt.fileLabel()+".log", 0o644); err != nil {
			run.close()
			return nil, err
		}
	}
	return run, nil
}

// prepareCache evicts (cold points) or warms the dataset's page cache and
// records how much of it is resident before the start.
func (s *launcher) prepareCache(pt point, stats *sensitivity.PointStats) error {
	cfg := s.cfg
	if s.deps.Cache == nil || cfg.DataDir == "" || pt.synthetic {
		return nil
	}
	dataDir := s.data.dataDirFor(pt) // the dataset, or its sample at a scaled memory point
	if pt.cold {
		if _, err := s.deps.Cache.Evict(dataDir); err != nil {
			return fmt.Errorf("evict dataset before %s: %w", pt.label(), err)
		}
	} else if err := s.deps.Cache.Warm(dataDir); err != nil {
		return fmt.Errorf("warm dataset before %s: %w", pt.label(), err)
	}
	res, _, err := s.deps.Cache.Resident(dataDir)
	if err != nil {
		return fmt.Errorf("check dataset residency before %s: %w", pt.label(), err)
	}
	stats.ResidentBytesBefore = res
	// In place the job reads on while its dataset is evicted: what it read
	// since is cached again, charged to it under its new limit.
	if pt.cold && !stats.InPlace && s.data.datasetBytes > 0 && float64(res) > 0.05*float64(s.data.datasetBytes) {
		s.rec.warnf("%s: %s of the dataset stayed cached after eviction (another process holds it?); the memory figure may be optimistic",
			pt.label(), units.FormatBytes(res))
	}
	return nil
}

// makeDirs makes the sweep's work directory (returned, for the caller to
// remove) and the log and timeline directories.
func (s *launcher) makeDirs() (string, error) {
	// Named after this process (a later run removes it if this one dies)
	// and 0700: only this run enters it; a container's user gets its own
	// point directory, mounted (runner/docker).
	work, err := owner.MkdirTemp("", owner.TempDirPrefix)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	s.workDir = work
	for _, d := range []struct {
		path string
		dir  **safefile.Dir
	}{{s.cfg.LogDir, &s.logs}, {s.cfg.TimelineDir, &s.timeline}} {
		if d.path == "" {
			continue
		}
		if *d.dir, err = safefile.MakeDir(d.path, 0o755); err != nil {
			s.closeDirs()
			os.RemoveAll(work)
			return "", fmt.Errorf("output dir: %w", err)
		}
	}
	return work, nil
}

// closeDirs closes the log and timeline directories.
func (s *launcher) closeDirs() {
	for _, d := range []*safefile.Dir{s.logs, s.timeline} {
		if d != nil {
			d.Close()
		}
	}
}
