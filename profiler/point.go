package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// meter is how a point is measured from its launch's stream: which
// iterations count (warm-up, settling after a change, whole passes from
// the second after a cold start), when to stop (the interval's target or a
// cap), and the cell's figures from what was measured.
type meter struct {
	cfg  *Config
	rec  *recorder
	data *dataset
	tmpl *template // the command's (jobargs.go), set by setupJob
	// noStream, once set, says why the job's points cannot be measured:
	// it writes no stream and its iterations are not known (measureWall).
	noStream string
}

// point is one (CPUs, memory limit) measurement.
type point struct {
	cpus      float64
	memLimit  int64
	phase     string
	cold      bool // dataset evicted before start; measure after one pass
	synthetic bool // the step-only run: --synthetic-data
	// A windowed launch (window.go) starts with these instead of the
	// point's own worker count and iteration cap; 0: the point's.
	launchWorkers, launchIters int
}

// memText is a memory limit as labels show it.
func (pt point) memText() string { return units.FormatMemLimit(pt.memLimit) }

// label names the point in progress lines and messages.
func (pt point) label() string {
	if pt.synthetic {
		return fmt.Sprintf("cpus=%g step only (synthetic data)", pt.cpus)
	}
	return fmt.Sprintf("cpus=%g mem=%s", pt.cpus, pt.memText())
}

// fileLabel names the point's log and timeline files.
func (pt point) fileLabel() string {
	if pt.synthetic {
		return fmt.Sprintf("cpus%g-steponly", pt.cpus)
	}
	return fmt.Sprintf("cpus%g-mem%s", pt.cpus, pt.memText())
}

// errInterrupted marks a point cut short by the sweep's context.
var errInterrupted = errors.New("interrupted")

// measurement is what a point's metrics stream says.
type measurement struct {
	all       []jobcontract.Iteration
	window    []jobcontract.Iteration // the steady-state iterations measured
	firstPass []jobcontract.Iteration // cold points: the first pass over the data
	est       Estimate
	rf        refill // how a point changed in place is measured (zero: it began its launch)
}

// refill says how a point is measured in the part of its launch's stream
// that follows a change in place: under a memory limit, once need
// iterations have read the dataset since its eviction (the page cache then
// holds what a new launch's holds after its first pass), over windows of
// passLen iterations, whole pass-lengths that need not begin where the
// job's passes do (over a whole pass-length each position in a shuffled
// pass is read once, as over a pass). The zero value: the point began its
// launch, measured from the job's start.
type refill struct {
	inPlace       bool
	need, passLen int // 0, 0: not known; the passes' own bounds are used
	// logLines: the iterations are the job's log lines (progress.go), each
	// many iterations: one, the first, is warm-up.
	logLines bool
}

// warmup is how many of a launch's first iterations are dropped.
func (s *meter) warmup(rf refill) int {
	if rf.logLines {
		return min(s.cfg.Warmup, 1)
	}
	return s.cfg.Warmup
}

// window picks the iterations to measure from all seen so far (all since
// a change in place when inPlace). Warm points drop the warm-up iterations.
// Cold points measure from their second pass over the data (coldStarts),
// once the page cache has settled under the limit; until then they
// measure nothing. From there they measure whole passes once one is
// complete (passBounds): under a page-cache limit a shuffled pass hits
// the cache most at its start and least at its end, so a part of a pass
// reads high (docs/cost.md, "Whole passes").
func (s *meter) window(pt point, all []jobcontract.Iteration, rf refill) (win, first []jobcontract.Iteration) {
	if !pt.cold {
		if len(all) <= s.warmup(rf) {
			return nil, nil
		}
		return all[s.warmup(rf):], nil
	}
	from, start := s.coldStarts(pt, all, rf)
	if start < 0 {
		if from >= 0 && len(all) > from {
			first = all[from:]
		}
		return nil, first
	}
	if start > from {
		first = all[from:start]
	}
	end := len(all)
	if e, passes, known := s.passBounds(pt, all, start, rf); known && passes > 0 {
		end = e
	}
	// The last first-pass iteration anchors the window's time.
	return all[max(start-1, 0):end], first
}

// coldStarts says where a cold point's first pass over the data begins
// (from) and where its measurement does (start), in all: for a launch that
// began cold, its warm-up's end and the job's second pass (epoch 1); for a
// point changed in place, the eviction and rf.need iterations after it;
// where rf.need is not known, the next two passes' beginnings after the
// eviction (the first whole pass since fills the cache under the limit,
// as a new launch's first does). -1 where not reached yet.
func (s *meter) coldStarts(pt point, all []jobcontract.Iteration, rf refill) (from, start int) {
	switch {
	case !rf.inPlace:
		return min(s.warmup(rf), len(all)), s.secondPass(pt, all)
	case rf.need > 0 && rf.passLen > 0:
		if len(all) > rf.need {
			return 0, rf.need
		}
		return 0, -1
	}
	from, start = -1, -1
	ipe := s.data.itersPerEpochAt(pt)
	for j := 1; j < len(all); j++ {
		a, b := all[j-1], all[j]
		begins := false
		switch {
		case a.Epoch != nil && b.Epoch != nil:
			begins = *a.Epoch != *b.Epoch
		case ipe > 0:
			begins = b.Iter%ipe == 0
		}
		if !begins {
			continue
		}
		if from < 0 {
			from = j
			continue
		}
		return from, j
	}
	return from, -1
}

// passLength is how many iterations one pass over the data takes, as the
// job's stream shows it (the last whole epoch it reported), else
// itersPerEpochAt; 0 when neither says.
func (s *meter) passLength(pt point, all []jobcontract.Iteration) int {
	last := -1
	for j := len(all) - 1; j > 0; j-- {
		a, b := all[j-1], all[j]
		if a.Epoch == nil || b.Epoch == nil || *a.Epoch == *b.Epoch {
			continue
		}
		if last >= 0 {
			return last - j
		}
		last = j
	}
	return s.data.itersPerEpochAt(pt)
}

// refillIterations is how many iterations a point changed in place under a
// memory limit reads after the dataset's eviction before its page cache
// holds what a new launch's holds after its first pass: the last bytes
// read, as many as the limit leaves beside the job's anonymous memory
// (anon, as its cgroup counted it at the change; 0 when unknown, which
// asks for more), at most a pass; and never fewer than the settling after
// a change. 0 when the pass's length is not known.
func (s *meter) refillIterations(pt point, passLen int, anon int64) int {
	if passLen <= 0 {
		return 0
	}
	frac := 1.0
	d := s.data.datasetBytes
	if s.data.scaledPoint(pt) && s.data.scaled != nil {
		d = s.data.scaled.bytes
	}
	if d > 0 {
		frac = math.Min(1, math.Max(0, float64(s.data.memLimitFor(pt)-anon)/float64(d)))
	}
	return max(int(math.Ceil(frac*float64(passLen))), s.settleIterations(Workers(pt.cpus, s.cfg.GPUs)))
}

// secondPass is the index of a launch's cold point's first iteration of
// its second pass over the data, or -1 before it.
func (s *meter) secondPass(pt point, all []jobcontract.Iteration) int {
	for i, it := range all {
		if it.Epoch != nil {
			if *it.Epoch >= 1 {
				return i
			}
		} else if ipe := s.data.itersPerEpochAt(pt); ipe > 0 && it.Iter >= ipe {
			return i
		}
	}
	return -1
}

// passBounds says where the complete passes over the data that begin at
// all[start] end: end is the index just past the last complete one, passes
// how many are complete. A pass ends where the job's epoch changes, or, for
// a job that reports no epoch, every itersPerEpochAt iterations; in place,
// where the refill is known, every rf.passLen iterations from start (whole
// pass-lengths); known is false when nothing says where.
func (s *meter) passBounds(pt point, all []jobcontract.Iteration, start int, rf refill) (end, passes int, known bool) {
	if start < 0 || start >= len(all) {
		return start, 0, false
	}
	if rf.inPlace && rf.need > 0 && rf.passLen > 0 {
		passes = (len(all) - start) / rf.passLen
		return start + passes*rf.passLen, passes, true
	}
	if all[start].Epoch != nil {
		end = start
		for j := start + 1; j < len(all); j++ {
			if all[j].Epoch != nil && all[j-1].Epoch != nil && *all[j].Epoch != *all[j-1].Epoch {
				end, passes = j, passes+1
			}
		}
		return end, passes, true
	}
	ipe := s.data.itersPerEpochAt(pt)
	if ipe <= 0 {
		return start, 0, false
	}
	passes = (len(all) - start) / ipe
	return start + passes*ipe, passes, true
}

// passCoverage is how much of a pass over the data a cold point's window
// holds: whole passes once one is complete, else the share of one pass
// measured so far (known when the job reports epochs or the pass's length
// is known). 0, false for a warm point.
func (s *meter) passCoverage(pt point, all []jobcontract.Iteration, rf refill) (passes float64, known bool) {
	if !pt.cold {
		return 0, false
	}
	from, start := s.coldStarts(pt, all, rf)
	if start < 0 {
		return 0, s.data.itersPerEpochAt(pt) > 0 || slices.ContainsFunc(all, func(it jobcontract.Iteration) bool { return it.Epoch != nil })
	}
	_, n, known := s.passBounds(pt, all, start, rf)
	if !known || n > 0 {
		return float64(n), known
	}
	// The share of one pass: a job that reports epochs showed the pass's
	// length in the pass before start; else the guess.
	ipe := s.data.itersPerEpochAt(pt)
	switch {
	case rf.inPlace && rf.passLen > 0:
		ipe = rf.passLen
	case all[start].Epoch != nil && rf.inPlace:
		ipe = start - from
	case all[start].Epoch != nil:
		ipe = start
	}
	if ipe > 0 {
		return min(float64(len(all)-start)/float64(ipe), 0.999), true
	}
	return 0, true
}

// stopForPoint is stopFor at the point's own cap (capFor), except that a
// cold point whose window is still inside its first measured pass goes on
// to the pass's end (the job is given the iterations for it:
// launchIterations).
func (s *meter) stopForPoint(pt point, all []jobcontract.Iteration, rf refill, est Estimate) string {
	if passes, known := s.passCoverage(pt, all, rf); known && passes < 1 {
		return ""
	}
	if s.footprintPass(pt) && reportsEpochs(all) && !crossesPass(all) {
		return "" // the footprint needs the pass's end and what follows it (memaxis.go)
	}
	return s.stopFor(est, s.capFor(pt))
}

// footprintPass reports whether pt's memory is what a memory axis fitted
// to the job will rest on, so that the point must see the job through the
// end of a pass and what follows it (an evaluation, a checkpoint: a
// script's peak), up to its time cap: an unlimited point at the grid's
// most CPUs (its most loader workers), while the axis is to be fitted and
// no unlimited point has crossed a pass's end yet.
func (s *meter) footprintPass(pt point) bool {
	p := s.rec.prof
	if !s.cfg.MemAxisFromJob || p.Axes.MemFrom != "" || pt.cold || pt.synthetic || !sensitivity.Unlimited(pt.memLimit) ||
		len(p.Axes.CPUs) == 0 || pt.cpus != p.Axes.CPUs[len(p.Axes.CPUs)-1] {
		return false
	}
	for _, c := range ownMemoryCells(p.Cells) {
		if c.Stats.PassBoundaries > 0 {
			return false
		}
	}
	return true
}

// reportsEpochs reports whether the stream says which pass each iteration
// is of.
func reportsEpochs(all []jobcontract.Iteration) bool {
	return slices.ContainsFunc(all, func(it jobcontract.Iteration) bool { return it.Epoch != nil })
}

// crossesPass reports whether the iterations cross a pass's end.
func crossesPass(all []jobcontract.Iteration) bool {
	for j := 1; j < len(all); j++ {
		if a, b := all[j-1].Epoch, all[j].Epoch; a != nil && b != nil && *a != *b {
			return true
		}
	}
	return false
}

// maxIterationsFor is the --max-iterations the job is given at a point:
// warm-up plus the cap; for cold points also the first pass over the data,
// the cap rounded up to whole passes, and one iteration of the pass after
// (it shows where the last measured one ended).
func (s *meter) maxIterationsFor(pt point) int {
	if pt.launchIters > 0 {
		return pt.launchIters
	}
	n := s.cfg.Warmup + s.cfg.MaxIterations
	if pt.cold {
		if ipe := s.data.itersPerEpochAt(pt); ipe > 0 {
			n = s.cfg.Warmup + ipe + s.capFor(pt) + 1
		}
	}
	return n
}

// capFor is the measured-iteration cap at a point. A cold point's is
// --max-iterations rounded up to whole passes over its data; a scaled one
// (cost_memscale.go) measures as many passes of its sample as a full-size
// point would of the whole dataset, so that the two measure the same
// thing (docs/cost.md, "Whole passes"): at F of the cost, not F of the
// passes.
func (s *meter) capFor(pt point) int {
	max := s.cfg.MaxIterations
	ipe := s.data.itersPerEpochAt(pt)
	if !pt.cold || ipe <= 0 {
		return max
	}
	passes := (max + ipe - 1) / ipe
	if full := s.data.itersPerEpoch(); s.data.scaledPoint(pt) && full > ipe {
		passes = (max + full - 1) / full
	}
	return passes * ipe
}

// pointRun is one launch of the job at a point, from prepare to classify.
type pointRun struct {
	metricsDir, metricsPath string
	log                     *os.File // nil: output kept only in tail
	tail                    *tailBuffer
	h                       runner.Handle
	sampling                *pointSampling
	tailer                  *jobcontract.Tailer
	// progress counts the job's log lines (--progress-regex; nil: none);
	// fromLog: the launch's iterations are those lines, not a stream.
	progress *progressScanner
	fromLog  bool
	m        measurement
	start    time.Time
	// live are the job's counters while it ran: once it exits its
	// anonymous memory is gone, so the figures recorded are the last ones
	// read while it ran.
	live liveStats
}

// pointEnd is how the watch ended.
type pointEnd struct {
	res         runner.Result
	err         error  // the runner's own failure
	stopReason  string // "" when the job ended by itself
	interrupted bool
	wall        float64 // seconds from launch until its results were collected
}

// close removes the metrics directory and closes the log.
func (run *pointRun) close() {
	if run.log != nil {
		run.log.Close()
	}
	os.RemoveAll(run.metricsDir)
}

// stopFor says why a point should stop now: converged, or at its iteration
// cap; "" to go on.
func (s *meter) stopFor(est Estimate, cap int) string {
	switch {
	case est.Iterations >= s.cfg.MinIterations && est.RelHalfWidth() <= s.cfg.TargetRelCI:
		return sensitivity.PointStopConverged
	case est.Iterations >= cap:
		return sensitivity.PointStopIterCap
	}
	return ""
}

// classifyEnd records how the job ended and its cgroup figures, and sets
// the cell's failure when the runner failed, the job was OOM-killed or
// exited non-zero by itself. It reports whether the stream is to be
// measured.
func (s *meter) classifyEnd(pt point, run *pointRun, end pointEnd, cell *sensitivity.Cell) bool {
	if e := end.res.Escaped; len(e) > 0 {
		s.rec.warnf("%s: %d process(es) of the job left its cgroup, escaping its limits, and outlived it; killed: %s",
			pt.label(), len(e), strings.Join(e, ", "))
	}
	if end.err != nil {
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed, ExitCode: -1, Message: "runner: " + end.err.Error()}
		return false
	}
	res, stats := end.res, cell.Stats
	fillRunnerStats(stats, res, run.live)
	stats.WallSeconds = end.wall
	stats.ExitCode = res.ExitCode
	switch {
	case res.OOMKilled:
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailOOMKilled, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("OOM-killed at %s after %d iterations (peak %s)", pt.label(), len(run.m.all), units.FormatBytes(res.Final.MemPeakBytes))}
		return false
	case end.stopReason == "" && res.ExitCode != 0:
		msg := fmt.Sprintf("job exited %s after %d iterations; last output: %s", exitText(res), len(run.m.all), run.tail.lastLine())
		if e := run.tail.scriptError(); e != "" {
			msg = fmt.Sprintf("job exited %s after %d iterations: %s", exitText(res), len(run.m.all), e)
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed, ExitCode: res.ExitCode, Message: msg}
		return false
	}
	return true
}

// measure turns the stream of a job that ended well into the cell's
// throughput and iteration figures, or a failure when it says too little:
// a stream that cannot be read (malformed_metrics, with the first bad line),
// no line before the time cap, or fewer than two measurable iterations.
// Only a job that wrote no stream at all is measured from its wall time.
func (s *meter) measure(pt point, run *pointRun, end pointEnd, cell *sensitivity.Cell) {
	cfg, m, stats := s.cfg, &run.m, cell.Stats
	stopReason := end.stopReason
	if stopReason == "" {
		stopReason = sensitivity.PointStopJobExited
	}
	stats.StopReason = stopReason
	stats.Iterations = len(m.all)
	stats.WarmupIterations = len(m.all) - m.est.Iterations // the window's first iteration only anchors time
	// Bad counts the launch's lines; m.all may hold a part of its good ones.
	if why := run.tailer.Broken(run.tailer.Lines - run.tailer.Bad); why != "" {
		stats.MetricsSource = sensitivity.MetricsStream
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailMalformedMetrics, ExitCode: stats.ExitCode,
			Message: why + " (docs/job-contract.md gives the line format)"}
		return
	}
	switch {
	case len(m.all) == 0 && stopReason == sensitivity.PointStopTimeCap:
		msg := fmt.Sprintf("no iteration reported within %s", cfg.PointTimeout)
		if s.cfg.ProgressRegex != "" {
			msg += fmt.Sprintf(" (no line of its output matched --progress-regex %q)", s.cfg.ProgressRegex)
		}
		if !run.tailer.Wrote() {
			msg += ". " + NoStreamHelp
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailTimeout, Message: msg}
		return
	case len(m.all) == 0:
		s.measureWall(pt, end, cell)
		return
	}
	stats.MetricsSource = sensitivity.MetricsStream
	if run.fromLog {
		stats.MetricsSource = sensitivity.MetricsLog
	}
	switch {
	case (m.est.Iterations < 2 || m.est.SamplesPerS <= 0) && stopReason == sensitivity.PointStopTimeCap:
		msg := fmt.Sprintf("only %d iterations reported within %s (%d measurable)", len(m.all), cfg.PointTimeout, m.est.Iterations)
		switch ipe := s.data.itersPerEpochAt(pt); {
		case pt.cold && ipe > 0:
			msg += fmt.Sprintf(": a point under a memory limit is measured over whole passes from its second, and a pass here is %d iterations; raise --point-timeout (or scale the memory points, --mem-scale)", ipe)
		default:
			msg += fmt.Sprintf(": the first %d iterations are warm-up; raise --point-timeout", cfg.Warmup)
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailTimeout, Message: msg}
		return
	case m.est.Iterations < 2 || m.est.SamplesPerS <= 0:
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailNoProgress, Message: s.noProgressText(pt, m)}
		return
	}
	cell.SamplesPerS = m.est.SamplesPerS
	cell.SamplesPerSCI95 = m.est.HalfWidth
	stats.PassBoundaries, stats.EpochOverheadS = m.est.PassBoundaries, m.est.EpochOverheadS
	if n := len(m.window); n < cfg.MinIterations { // the window's iterations, the first anchoring time
		stats.Unconverged = fmt.Sprintf("%d iterations measured, below the minimum of %d (stopped: %s)", n, cfg.MinIterations, stopReason)
		s.rec.warnf("%s: only %d iterations measured (stopped: %s), below the minimum of %d (--min-iterations): the figure and its interval are not converged; give the point more time (--point-timeout)",
			pt.label(), n, stopReason, cfg.MinIterations)
	}
	stats.MeasureSeconds = m.window[len(m.window)-1].TS - m.window[0].TS // the measured span (cost.go)
	stats.Converged = stopReason == sensitivity.PointStopConverged
	secs := iterSeconds(m.window)
	stats.IterSecondsP50 = percentile(secs, 50)
	stats.IterSecondsP95 = percentile(secs, 95)
	stats.DataWaitFraction = dataWaitFraction(m.window)
	stats.StepSecondsMean = meanStep(m.window[1:])
	if fp := estimate(m.firstPass); fp.SamplesPerS > 0 {
		stats.FirstPassSamplesPS = fp.SamplesPerS
	}
	if passes, known := s.passCoverage(pt, m.all, m.rf); known {
		stats.MeasuredPasses = passes
		if passes < 1 {
			s.rec.warnf("%s: measured %.0f%% of one pass over the data (stopped: %s): under a page-cache limit a shuffled pass hits the cache most at its start and least at its end, so part of a pass reads high; give the point a whole pass (--point-timeout, --max-iterations) or scale the memory points (--mem-scale)",
				pt.label(), 100*passes, stopReason)
		}
	}
	if slices.ContainsFunc(m.all, func(it jobcontract.Iteration) bool { return it.Emulated }) {
		s.rec.sawEmulated = true
	}
	s.rec.noteEmulatedGPU(m.all)
}

// measureWall measures a job that wrote no metrics stream, only where the
// iterations it ran are known: its command passed it how many (an
// {iterations} placeholder) and it ran to its end by itself. Its throughput is then those iterations' samples
// over the wall time of the whole run, start-up included: a lower bound
// of the steady rate with no interval to be had from one number, so its
// interval is recorded as unknown (a half-width of the figure itself,
// never ±0). Anywhere else the cell is refused (no_progress) with the
// ways to a stream, and the sweep launches the job no more
// (meter.noStream): every point would be refused alike. The planned
// iteration count is never taken for what a job that was stopped ran.
func (s *meter) measureWall(pt point, end pointEnd, cell *sensitivity.Cell) {
	n := s.maxIterationsFor(pt)
	cell.Stats.MetricsSource = sensitivity.MetricsWall
	if why := s.wallUnknown(end); why != "" {
		cell.Stats.Iterations, cell.Stats.WarmupIterations = 0, 0
		s.noStream = fmt.Sprintf("%s wrote no metrics stream and %s, so the iterations it ran are not known: "+
			"no throughput without them. %s", s.cfg.JobName, why, NoStreamHelp)
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailNoProgress, ExitCode: end.res.ExitCode, Message: s.noStream}
		return
	}
	cell.Stats.Iterations = n
	cell.Stats.WarmupIterations = 0
	if end.wall > 0 {
		cell.SamplesPerS = float64(n*s.cfg.Batch) / end.wall
		cell.SamplesPerSCI95 = cell.SamplesPerS
	}
	s.rec.warnf("%s wrote no metrics stream: it ran the %d iterations it was given to its end, so its throughput is those iterations over the wall time, start-up included (a lower bound), with an unknown interval (metrics_source %q); %s",
		s.cfg.JobName, n, sensitivity.MetricsWall, NoStreamHelp)
}

// NoStreamHelp says how a job without a metrics stream gets one.
const NoStreamHelp = "To measure it, let it write the stream: two lines of models/pytorch/synergy_metrics.py " +
	"(`metrics = SynergyMetrics()` and `for batch in metrics.wrap(batches):`; docs/job-contract.md), " +
	"or give --progress-regex matching the log lines that count its iterations (e.g. --progress-regex '\\| +([0-9]+)/ *[0-9]+ batches'), " +
	"or pass {iterations} where the script takes how many iterations to run"

// wallUnknown says why the iterations a job without a stream ran are not
// known ("" when they are: it was told how many and ended by itself).
func (s *meter) wallUnknown(end pointEnd) string {
	switch {
	case end.stopReason != "":
		return fmt.Sprintf("was stopped (%s) before it ended by itself", end.stopReason)
	case s.tmpl == nil || !s.tmpl.used[PlaceholderIterations]:
		// An appended --max-iterations is no promise: a script that ignores
		// it exits 0 as well.
		return "its command does not pass it the iteration count ({iterations})"
	}
	return ""
}

// statsEvery is how often the profiler polls a running job's counters when
// no cgroup sampler reads them.
const statsEvery = 500 * time.Millisecond

// liveStats keeps what was read from a job's cgroup while it ran.
type liveStats struct {
	n        int
	last     runner.Stats
	anonPeak int64
}

func (l *liveStats) add(st runner.Stats) {
	l.n++
	l.last = st
	l.anonPeak = max(l.anonPeak, st.MemAnonBytes)
}

// fillRunnerStats records a point's cgroup figures: cumulative counters from
// the final read (they survive the job), memory split from the last read
// while it ran, and anonymous memory at its peak.
func fillRunnerStats(st *sensitivity.PointStats, res runner.Result, live liveStats) {
	f := res.Final
	st.CPUUsageSeconds = f.CPUUsageSeconds
	st.CPUThrottledPeriods = f.CPUThrottledPeriods
	st.CPUThrottledSeconds = f.CPUThrottledSeconds
	st.MemPeakBytes = f.MemPeakBytes
	st.IOReadBytes = f.IOReadBytes
	st.MemCacheBytes = f.MemCacheBytes
	st.MemAnonBytes = f.MemAnonBytes
	if live.n > 0 {
		st.MemCacheBytes = live.last.MemCacheBytes
		st.MemAnonBytes = live.anonPeak
		st.MemPeakBytes = max(st.MemPeakBytes, live.last.MemPeakBytes)
	}
}

func exitText(res runner.Result) string {
	if res.Signal != "" {
		return "by signal " + res.Signal
	}
	return "with status " + strconv.Itoa(res.ExitCode)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max { // only its end can be kept: never hold the rest
		p = p[len(p)-t.max:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return n, nil
}

// MaxPointLogBytes bounds a point's log file (the job's stdout and
// stderr), so that a job writing without end does not fill the output
// directory's disk: past it, one line says so and the rest is dropped.
const MaxPointLogBytes = 64 << 20

// cappedWriter passes at most left bytes on to w, then one line saying
// the rest was dropped, and takes everything (the job is never blocked).
type cappedWriter struct {
	w     io.Writer
	left  int64
	noted bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	q := p
	if int64(len(q)) > c.left {
		q = q[:max(c.left, 0)]
	}
	if len(q) > 0 {
		c.left -= int64(len(q))
		if _, err := c.w.Write(q); err != nil {
			return 0, err
		}
	}
	if len(q) < len(p) && !c.noted {
		c.noted = true
		fmt.Fprintf(c.w, "\n[synergy: this log stops at %d MiB; the job wrote more, which was dropped]\n", MaxPointLogBytes>>20)
	}
	return len(p), nil
}

// maxQuotedOutput bounds the job's last output line in a failure message.
const maxQuotedOutput = 512

// scriptError is the script's own error in what it wrote last: the last
// Python traceback's exception line and its innermost frame ("" when it
// wrote none), quoted as lastLine is. The probe's and the control
// channel's notes are not it.
func (t *tailBuffer) scriptError() string {
	const head = "Traceback (most recent call last):"
	i := bytes.LastIndex(t.buf, []byte(head))
	if i < 0 {
		return ""
	}
	var frame, exc string
	for _, l := range strings.Split(string(t.buf[i+len(head):]), "\n") {
		l = strings.TrimRight(l, "\r")
		tl := strings.TrimSpace(l)
		switch {
		case tl == "", strings.HasPrefix(tl, "synergy-probe:"), strings.HasPrefix(tl, "synergy-control:"):
		case strings.HasPrefix(tl, "File \""):
			frame, exc = tl, ""
		case strings.HasPrefix(l, " "): // the frame's source line, a caret line
		case exc == "": // the exception: the first line after the last frame
			exc = tl
		}
	}
	if exc == "" {
		return ""
	}
	if frame != "" {
		exc += " (" + frame + ")"
	}
	return jobcontract.QuoteN([]byte(exc), maxQuotedOutput) // it reaches the terminal
}

// lastLine returns the last non-empty line written, quoted (escaped, at
// most maxQuotedOutput bytes: it reaches the terminal), or "(none)".
func (t *tailBuffer) lastLine() string {
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 {
			return jobcontract.QuoteN(l, maxQuotedOutput)
		}
	}
	return "(none)"
}

// bestCPU returns the CPU count of the CPU sweep with the highest
// throughput; among counts within the best one's confidence interval it
// takes the fewest cores.
func bestCPU(cells []sensitivity.Cell) (float64, bool) {
	var ok []sensitivity.Cell
	for _, c := range cells {
		if c.Measured && c.Failure == nil && sensitivity.Unlimited(c.MemLimitBytes) && c.SamplesPerS > 0 {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return 0, false
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i].CPUs < ok[j].CPUs })
	best := ok[0]
	for _, c := range ok[1:] {
		if c.SamplesPerS > best.SamplesPerS {
			best = c
		}
	}
	for _, c := range ok {
		if c.SamplesPerS >= best.SamplesPerS-best.SamplesPerSCI95 {
			return c.CPUs, true
		}
	}
	return best.CPUs, true
}

// noProgressText says why a job that ended well left fewer than two
// measurable iterations. A limited (cold) point is measured from the job's
// second pass over the data; a job whose epoch is longer than the
// profiler's guess of one (a sample per file) ends inside its first pass,
// which the text names with the flag to raise.
func (s *meter) noProgressText(pt point, m *measurement) string {
	text := fmt.Sprintf("%d iterations reported, %d measurable after warm-up: raise the iteration cap", len(m.all), m.est.Iterations)
	if !pt.cold || len(m.all) == 0 {
		return text
	}
	last := m.all[len(m.all)-1]
	if last.Epoch == nil || *last.Epoch >= 1 {
		return text
	}
	return fmt.Sprintf("%d iterations reported, all in the job's first pass over the data (epoch 0): a limited point "+
		"is measured from the second pass, and the iteration cap allowed one pass of %d iterations (%d files at batch %d); "+
		"the job's pass is longer (many samples per file?): raise --max-iterations above one epoch",
		len(m.all), s.data.itersPerEpochAt(pt), s.data.datasetFiles, s.cfg.Batch)
}

// pick returns the point's iterations (since), the measured ones (win;
// the first only anchors time) and, under a memory limit, the first pass.
func (s *meter) pick(pt point, a anchor, all []jobcontract.Iteration) (since, win, first []jobcontract.Iteration) {
	since = a.since(all)
	if !a.changed || pt.cold {
		win, first = s.window(pt, since, a.refill)
		return since, win, first
	}
	// A warm point after a change drops settleIterations and settleMin.
	i := max(s.settleIterations(Workers(pt.cpus, s.cfg.GPUs)), 1) - 1
	for i < len(since) && since[i].TS < a.t0+settleMin.Seconds() {
		i++
	}
	if i >= len(since) {
		return since, nil, nil
	}
	return since, since[i:], nil
}

// launchIterations is the --max-iterations a launch is given: enough for
// every cell of the grid, each after its settling and, under a memory
// limit, its first passes, with its cap; the sweep stops the job long
// before that. A job that reports nothing (measured by its wall time) runs
// one point: its cap is that point's own (maxIterationsFor).
func (s *meter) launchIterations(pt point) int {
	per := s.cfg.MaxIterations + s.settleIterations(Workers(pt.cpus, s.cfg.GPUs)) + 1
	if ipe := s.data.itersPerEpochAt(pt); ipe > 0 {
		per = max(per, 3*ipe+s.capFor(mkPoint(pt.cpus, 1, "")))
	}
	cells := len(s.rec.prof.Axes.CPUs)*len(s.rec.prof.Axes.MemLimitBytes) + 2
	return s.cfg.Warmup + per*cells
}

// settleIterations is how many whole iterations after a change are
// dropped: the warm-up count, and at least the loader's prefetch queue (2
// batches per worker, PyTorch's default prefetch_factor), which was filled
// at the old settings and drains first.
func (s *meter) settleIterations(workers int) int { return max(s.cfg.Warmup, 2*workers) }

// startLaunch starts the job for pt, its first point: at pt's limits and
// loader workers, with the launch's iteration cap.
func (s *launcher) startLaunch(ctx context.Context, pt point) (*launch, error) {
	pt.launchWorkers = Workers(pt.cpus, s.cfg.GPUs)
	if !pt.synthetic {
		pt.launchIters = s.meter.launchIterations(pt)
	}
	run, err := s.prepare(pt)
	if err != nil {
		return nil, err
	}
	ctl, err := newControl(run.metricsDir, s.cfg.PointTimeout)
	if err != nil {
		run.close()
		return nil, err
	}
	s.rec.prof.Cost.Launches++
	if s.relaunchWhy != "" {
		if len(s.rec.prof.Cost.Relaunches) < maxRelaunchNotes {
			s.rec.prof.Cost.Relaunches = append(s.rec.prof.Cost.Relaunches,
				fmt.Sprintf("launch %d (%s): %s", s.rec.prof.Cost.Launches, pt.label(), s.relaunchWhy))
		}
		if s.deps.Progress != nil {
			s.deps.Progress.Note(fmt.Sprintf("%s: relaunching the job: %s", pt.label(), s.relaunchWhy))
		}
		s.relaunchWhy = ""
	}
	if err := s.launchJob(ctx, pt, run, ctl.env()); err != nil {
		ctl.close()
		run.close()
		return nil, err
	}
	l := &launch{id: s.rec.prof.Cost.Launches, first: pt, last: pt, run: run, u: runner.AsUpdater(run.h), ctl: ctl,
		waitCh: make(chan pointEnd, 1), ended: make(chan struct{}),
		limits: s.limitsFor(pt), workers: pt.launchWorkers, threads: s.launchThreads(pt), dataDir: s.data.dataDirFor(pt), synthetic: pt.synthetic, readCold: pt.cold}
	go func() {
		res, err := run.h.Wait()
		l.waitCh <- pointEnd{res: res, err: err}
		close(l.ended)
	}()
	s.live = l
	return l, nil
}
