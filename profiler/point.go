package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Stop reasons recorded in a cell's stats.
const (
	StopConverged = "converged"     // the confidence interval reached its target
	StopJobExited = "job_exited"    // the job ran to --max-iterations by itself
	StopIterCap   = "iteration_cap" // the measured-iteration cap was reached
	StopTimeCap   = "time_cap"      // the point's time cap was reached
)

// point is one (CPUs, memory limit) measurement.
type point struct {
	cpus      float64
	memLimit  int64
	phase     string
	cold      bool // dataset evicted before start; measure after one pass
	synthetic bool // the step-only run: --synthetic-data
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
}

// itersPerEpoch returns how many iterations one pass over the dataset takes,
// or 0 when unknown.
func (s *sweep) itersPerEpoch() int {
	if s.datasetFiles <= 0 || s.cfg.Batch <= 0 {
		return 0
	}
	return (s.datasetFiles + s.cfg.Batch - 1) / s.cfg.Batch
}

// window picks the iterations to measure from all seen so far. Warm points
// drop the warm-up iterations. Cold points measure from the second pass over
// the data (epoch >= 1, or past one epoch's worth of iterations when the job
// reports no epoch), once the page cache has settled under the limit; until
// then they measure nothing.
func (s *sweep) window(pt point, all []jobcontract.Iteration) (win, first []jobcontract.Iteration) {
	if !pt.cold {
		if len(all) <= s.cfg.Warmup {
			return nil, nil
		}
		return all[s.cfg.Warmup:], nil
	}
	start := -1
	for i, it := range all {
		if it.Epoch != nil {
			if *it.Epoch >= 1 {
				start = i
				break
			}
		} else if ipe := s.itersPerEpoch(); ipe > 0 && it.Iter >= ipe {
			start = i
			break
		}
	}
	if start < 0 {
		if len(all) > s.cfg.Warmup {
			first = all[s.cfg.Warmup:]
		}
		return nil, first
	}
	if start > s.cfg.Warmup {
		first = all[s.cfg.Warmup:start]
	}
	// The last first-pass iteration anchors the window's time.
	return all[max(start-1, 0):], first
}

// maxIterationsFor is the --max-iterations the job is given at a point:
// warm-up plus the cap, plus one pass over the data for cold points.
func (s *sweep) maxIterationsFor(pt point) int {
	n := s.cfg.Warmup + s.cfg.MaxIterations
	if pt.cold {
		n += s.itersPerEpoch()
	}
	return n
}

func (s *sweep) argv(pt point) []string {
	contract := jobcontract.Point{
		Batch:         s.cfg.Batch,
		Workers:       Workers(pt.cpus, s.cfg.GPUs),
		MaxIterations: s.maxIterationsFor(pt),
		DataDir:       s.cfg.DataDir,
		Synthetic:     pt.synthetic,
	}
	return append(append([]string(nil), s.cfg.Command...), contract.Args()...)
}

// runPoint measures one point and returns its cell. It returns
// errInterrupted (and no cell) when ctx is cancelled.
func (s *sweep) runPoint(ctx context.Context, pt point) (sensitivity.Cell, error) {
	cfg := &s.cfg
	cell := sensitivity.Cell{CPUs: pt.cpus, MemLimitBytes: pt.memLimit, Measured: true, Phase: pt.phase}
	stats := &sensitivity.PointStats{Workers: Workers(pt.cpus, cfg.GPUs), ColdStart: pt.cold}
	cell.Stats = stats

	if cfg.Cache != nil && cfg.DataDir != "" && !pt.synthetic {
		if pt.cold {
			if _, err := cfg.Cache.Evict(cfg.DataDir); err != nil {
				return cell, fmt.Errorf("evict dataset before %s: %w", pt.label(), err)
			}
		} else if err := cfg.Cache.Warm(cfg.DataDir); err != nil {
			return cell, fmt.Errorf("warm dataset before %s: %w", pt.label(), err)
		}
		res, _, err := cfg.Cache.Resident(cfg.DataDir)
		if err != nil {
			return cell, fmt.Errorf("check dataset residency before %s: %w", pt.label(), err)
		}
		stats.ResidentBytesBefore = res
		if pt.cold && s.datasetBytes > 0 && float64(res) > 0.05*float64(s.datasetBytes) {
			s.warnf("%s: %s of the dataset stayed cached after eviction (another process holds it?); the memory figure may be optimistic",
				pt.label(), units.FormatBytes(res))
		}
	}

	metricsDir, err := os.MkdirTemp(s.workDir, "point-*")
	if err != nil {
		return cell, err
	}
	defer os.RemoveAll(metricsDir)
	metricsPath := filepath.Join(metricsDir, "metrics.jsonl")

	var logW io.Writer = io.Discard
	tail := &tailBuffer{max: 4096}
	if cfg.LogDir != "" {
		f, err := os.Create(filepath.Join(cfg.LogDir, pt.fileLabel()+".log"))
		if err != nil {
			return cell, err
		}
		defer f.Close()
		logW = f
	}
	out := io.MultiWriter(logW, tail)

	job := runner.Job{
		Name: cfg.JobName,
		Argv: s.argv(pt),
		Env: append(append([]string(nil), cfg.Env...),
			jobcontract.EnvMetricsFile+"="+metricsPath,
			jobcontract.EnvPoint+"="+pt.label()),
		Stdout: out, Stderr: out,
		Limits: runner.Limits{
			CPUs:          pt.cpus,
			MemLimitBytes: pt.memLimit,
			ReadBPS:       cfg.ReadBPS,
			ReadBPSPath:   cfg.DataDir,
		},
		DataDir:    cfg.DataDir,
		MetricsDir: metricsDir,
	}
	start := cfg.Now()
	h, err := cfg.Runner.Start(ctx, job)
	if err != nil {
		if ctx.Err() != nil {
			return cell, errInterrupted
		}
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailStartFailed, Message: err.Error()}
		return cell, nil
	}

	sampling, err := s.startSampling(h, pt)
	if err != nil {
		s.warnf("%s: sampling: %v", pt.label(), err)
	}
	type waited struct {
		res runner.Result
		err error
	}
	waitCh := make(chan waited, 1)
	go func() {
		r, err := h.Wait()
		waitCh <- waited{r, err}
	}()

	tailer := jobcontract.NewTailer(metricsPath)
	var m measurement
	poll := func() {
		its, err := tailer.Poll()
		if err != nil {
			s.warnf("%s: reading metrics: %v", pt.label(), err)
			return
		}
		m.all = append(m.all, its...)
		m.window, m.firstPass = s.window(pt, m.all)
		m.est = estimate(m.window)
	}
	ticker := time.NewTicker(cfg.Poll)
	defer ticker.Stop()
	deadline := time.NewTimer(cfg.PointTimeout)
	defer deadline.Stop()
	lastUpdate := time.Time{}
	// Counters of a live job: once it exits its anonymous memory is gone,
	// so the figures recorded are the last ones read while it ran. The
	// cgroup sampler's reads feed them; a handle without cgroup paths is
	// polled instead.
	var live liveStats
	_, sampled := sampling.liveStats()
	lastStats := time.Time{}

	stopReason := ""
	interrupted := false
	var w waited
loop:
	for {
		select {
		case w = <-waitCh:
			break loop
		case <-ctx.Done():
			interrupted = true
			_ = h.Stop()
		case <-deadline.C:
			stopReason = StopTimeCap
			_ = h.Stop()
		case <-ticker.C:
			poll()
			if !sampled && time.Since(lastStats) >= statsEvery {
				lastStats = time.Now()
				if st, err := h.Stats(); err == nil {
					live.add(st)
				}
			}
			if s.cfg.Progress != nil && time.Since(lastUpdate) >= 500*time.Millisecond {
				lastUpdate = time.Now()
				s.cfg.Progress.PointUpdate(pt.label(), m.est.Iterations, m.est, cfg.Now().Sub(start))
			}
			if stopReason != "" {
				continue
			}
			if m.est.Iterations >= cfg.MinIterations && m.est.RelHalfWidth() <= cfg.TargetRelCI {
				stopReason = StopConverged
				_ = h.Stop()
			} else if m.est.Iterations >= cfg.MaxIterations {
				stopReason = StopIterCap
				_ = h.Stop()
			}
		}
	}
	poll()
	if l, ok := sampling.liveStats(); ok {
		live = l
	}
	sampling.stop(s, stats)
	s.keepMetrics(pt, metricsPath)
	if tailer.Bad > 0 {
		s.warnf("%s: %d malformed metrics lines (first: %s)", pt.label(), tailer.Bad, strings.Join(tailer.Errors, "; "))
	}
	wall := cfg.Now().Sub(start).Seconds()
	if interrupted || (w.err != nil && ctx.Err() != nil) {
		return cell, errInterrupted
	}
	if w.err != nil {
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed, ExitCode: -1, Message: "runner: " + w.err.Error()}
		return cell, nil
	}
	res := w.res
	fillRunnerStats(stats, res, live)
	stats.WallSeconds = wall
	stats.ExitCode = res.ExitCode

	switch {
	case res.OOMKilled:
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailOOMKilled, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("OOM-killed at %s after %d iterations (peak %s)", pt.label(), len(m.all), units.FormatBytes(res.Final.MemPeakBytes))}
		return cell, nil
	case stopReason == "" && res.ExitCode != 0:
		cell.Failure = &sensitivity.Failure{Class: sensitivity.FailCrashed, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("job exited %s after %d iterations; last output: %s", exitText(res), len(m.all), tail.lastLine())}
		return cell, nil
	}

	if stopReason == "" {
		stopReason = StopJobExited
	}
	stats.StopReason = stopReason
	stats.Iterations = len(m.all)
	stats.WarmupIterations = len(m.all) - m.est.Iterations // the window's first iteration only anchors time

	if len(m.all) == 0 {
		if stopReason == StopTimeCap {
			cell.Failure = &sensitivity.Failure{Class: sensitivity.FailTimeout,
				Message: fmt.Sprintf("no iteration reported within %s", cfg.PointTimeout)}
			return cell, nil
		}
		// The job wrote no stream: measure from wall time.
		n := s.maxIterationsFor(pt)
		stats.MetricsSource = sensitivity.MetricsWall
		stats.Iterations = n
		if wall > 0 {
			cell.SamplesPerS = float64(n*cfg.Batch) / wall
		}
		return cell, nil
	}
	stats.MetricsSource = sensitivity.MetricsStream
	if m.est.Iterations < 2 || m.est.SamplesPerS <= 0 {
		if stopReason == StopTimeCap {
			cell.Failure = &sensitivity.Failure{Class: sensitivity.FailTimeout,
				Message: fmt.Sprintf("only %d iterations reported within %s (%d measurable)", len(m.all), cfg.PointTimeout, m.est.Iterations)}
		} else {
			cell.Failure = &sensitivity.Failure{Class: sensitivity.FailNoProgress,
				Message: fmt.Sprintf("%d iterations reported, %d measurable after warm-up: raise --max-iterations", len(m.all), m.est.Iterations)}
		}
		return cell, nil
	}
	cell.SamplesPerS = m.est.SamplesPerS
	cell.SamplesPerSCI95 = m.est.HalfWidth
	stats.Converged = stopReason == StopConverged
	secs := iterSeconds(m.window)
	stats.IterSecondsP50 = percentile(secs, 50)
	stats.IterSecondsP95 = percentile(secs, 95)
	stats.DataWaitFraction = dataWaitFraction(m.window)
	stats.StepSecondsMean = meanStep(m.window[1:])
	if fp := estimate(m.firstPass); fp.SamplesPerS > 0 {
		stats.FirstPassSamplesPS = fp.SamplesPerS
	}
	for _, it := range m.all {
		if it.Emulated {
			s.sawEmulated = true
			break
		}
	}
	return cell, nil
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
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// lastLine returns the last non-empty line written, or "(none)".
func (t *tailBuffer) lastLine() string {
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			return l
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
