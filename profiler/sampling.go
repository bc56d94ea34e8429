package profiler

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/profiler/cgstat"
	"github.com/synergy-sched/synergy/profiler/cpuspeed"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/sensitivity"
)

// pointSampling runs the sampling loop while one point runs: the sweep's
// own samplers (host, GPU) plus a reader of the point's cgroup files, the
// point's one reader of them: its clean reads also feed live, the job's
// counters while it runs.
type pointSampling struct {
	loop   *sample.Loop
	agg    *sample.Aggregator
	file   *os.File
	cgroup *cgroupfs.Reader // nil when the handle has no cgroup paths
	cancel context.CancelFunc
	wg     sync.WaitGroup
	path   string

	mu   sync.Mutex
	live liveStats
}

// startSampling starts sampling a running point; nil when there is nothing
// to sample with.
func (s *launcher) startSampling(h runner.Handle, pt point) (*pointSampling, error) {
	ps := &pointSampling{agg: sample.NewAggregator()}
	samplers := append([]sample.Sampler(nil), s.deps.Samplers...)
	if paths := h.CgroupPaths(); len(paths) > 0 {
		r, err := cgroupfs.Open(paths)
		if err != nil {
			s.rec.warnf("%s: cgroup sampler: %v", pt.label(), err)
		} else {
			ps.cgroup = r
			samplers = append(samplers, cgstat.NewSampler(r, ps.observe))
		}
		samplers = append(samplers, cpuspeed.New(paths))
	}
	if len(samplers) == 0 {
		return nil, nil
	}
	if err := ps.start(*s.cfg, s.timeline, pt, samplers); err != nil {
		ps.close()
		return nil, err
	}
	return ps, nil
}

// start opens the point's timeline file in dir, if any, and runs the loop.
func (ps *pointSampling) start(cfg Config, dir *safefile.Dir, pt point, samplers []sample.Sampler) error {
	sink := sample.Sink(ps.agg)
	if dir != nil {
		ps.path = filepath.Join(dir.Path(), pt.fileLabel()+".samples.jsonl")
		f, err := dir.Create(pt.fileLabel()+".samples.jsonl", 0o644)
		if err != nil {
			return fmt.Errorf("timeline: %w", err)
		}
		ps.file = f
		sink = sample.Tee(ps.agg, sample.NewJSONLWriter(f))
	}
	loop, err := sample.NewLoop(cfg.SampleInterval, sink, samplers...)
	if err != nil {
		return err
	}
	ps.loop = loop
	ctx, cancel := context.WithCancel(context.Background())
	ps.cancel = cancel
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		loop.Run(ctx)
	}()
	return nil
}

// observe keeps a clean read of the point's cgroup (the loop's goroutine).
func (ps *pointSampling) observe(st runner.Stats) {
	ps.mu.Lock()
	ps.live.add(st)
	ps.mu.Unlock()
}

// liveStats returns what the cgroup sampler read while the job ran, and
// whether it reads the job's cgroup at all (if not, the caller polls
// Handle.Stats itself).
func (ps *pointSampling) liveStats() (liveStats, bool) {
	if ps == nil || ps.cgroup == nil {
		return liveStats{}, false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.live, true
}

// close releases the timeline file and the cgroup files.
func (ps *pointSampling) close() {
	if ps.file != nil {
		ps.file.Close()
	}
	if ps.cgroup != nil {
		ps.cgroup.Close()
	}
}

// stop ends sampling, records the aggregates in stats and the samplers'
// health in the sweep. GPU figures cover the measured iterations (window),
// not the launch (see gpuFigures).
func (ps *pointSampling) stop(s *recorder, st *sensitivity.PointStats, window []jobcontract.Iteration) {
	if ps == nil {
		return
	}
	ps.cancel()
	ps.wg.Wait()
	ps.close()
	if ps.file != nil {
		st.Timeline = ps.path
	}
	if sum, ok := ps.agg.Summary("host_cpu_pct"); ok {
		st.HostCPUPctMean = sum.Mean
	}
	if sum, ok := ps.agg.Summary(cpuspeed.SeriesMOps); ok {
		st.CPUSpeedMOps = sum.Mean
	}
	if sum, ok := ps.agg.Summary(cgstat.SeriesCPUUsageS); ok && sum.Count > 1 {
		if dt := sum.LastTime.Sub(sum.FirstTime).Seconds(); dt > 0 {
			st.CPUCoresMean = sum.Delta() / dt
		}
	}
	gpuFigures(ps.agg, window, st)
	for _, h := range ps.loop.Health() {
		s.addHealth(h)
	}
	// The sink (the aggregator and the timeline file) is listed beside
	// the samplers: its samples are the records written, its errors the
	// records refused, a gap in what the profile says it saw.
	s.addHealth(ps.loop.SinkHealth())
}

// GPU series of the NVML sampler, per device: "gpu<i>_" + suffix.
const (
	gpuUtil    = "util_pct"
	gpuJobSM   = "job_sm_util_pct"
	gpuMemUsed = "mem_used_bytes"
	gpuPower   = "power_w"
	gpuSMClock = "sm_clock_mhz"
)

// gpuFigures records the GPU figures of a point over its measured
// iterations: from the first measured iteration's timestamp to the last's,
// the span the rate is taken over. Averaged over the whole launch they
// would count the framework's start-up (about 10 s of torch and CUDA
// before the first iteration on a GPU server, where utilisation read 8.7%
// for a launch that kept the GPU 55.7% busy while measured). With fewer
// than two measured iterations, or no sample in their span, the launch
// is used and said so. Across devices: utilisation, the job's SM share and
// the SM clock are the devices' mean, power and memory used their sum
// (memory used at its peak).
func gpuFigures(agg *sample.Aggregator, window []jobcontract.Iteration, st *sensitivity.PointStats) {
	var devs []string
	for _, name := range agg.Names() {
		if p, ok := strings.CutSuffix(name, "_"+gpuUtil); ok && strings.HasPrefix(p, "gpu") && !strings.Contains(p, "_") {
			devs = append(devs, p+"_")
		}
	}
	if len(devs) == 0 {
		return
	}
	summary := func(name string) (sample.Summary, bool) { return agg.Summary(name) }
	st.GPUStatsOver = sensitivity.GPUStatsLaunch
	if len(window) >= 2 {
		from, to := tsTime(window[0].TS), tsTime(window[len(window)-1].TS)
		if _, ok := agg.SummaryBetween(devs[0]+gpuUtil, from, to); ok {
			summary = func(name string) (sample.Summary, bool) { return agg.SummaryBetween(name, from, to) }
			st.GPUStatsOver = sensitivity.GPUStatsMeasured
		}
	}
	mean := func(suffix string) (float64, bool) {
		var t float64
		n := 0
		for _, d := range devs {
			if sum, ok := summary(d + suffix); ok {
				t += sum.Mean
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return t / float64(n), true
	}
	total := func(suffix string, pick func(sample.Summary) float64) float64 {
		var t float64
		for _, d := range devs {
			if sum, ok := summary(d + suffix); ok {
				t += pick(sum)
			}
		}
		return t
	}
	st.GPUUtilPctMean, _ = mean(gpuUtil)
	st.GPUJobSMUtilPctMean, _ = mean(gpuJobSM)
	st.GPUSMClockMHzMean, _ = mean(gpuSMClock)
	st.GPUPowerWMean = total(gpuPower, func(s sample.Summary) float64 { return s.Mean })
	st.GPUMemUsedBytesMax = int64(total(gpuMemUsed, func(s sample.Summary) float64 { return s.Max }))
}

// tsTime turns a metrics line's ts (Unix seconds) into a time.
func tsTime(ts float64) time.Time {
	sec := math.Floor(ts)
	return time.Unix(int64(sec), int64((ts-sec)*1e9))
}

// keepMetrics copies a launch's metrics stream, as the job wrote it, to
// the timeline as name: the job's file, opened as the tailer opens it
// (jobcontract.OpenJobFile), line by line, leaving out the lines the
// tailer refuses as too long and stopping at maxTimelineMetrics bytes,
// with a warning for either. The sweep keeps it for a stream with
// malformed lines, which the points' own files (keepPointMetrics) leave
// out.
func (s *launcher) keepMetrics(name, label, src string) {
	if s.timeline == nil {
		return
	}
	in, err := jobcontract.OpenJobFile(src)
	if err != nil {
		return // the job wrote no stream (or not a file: the tailer warned)
	}
	defer in.Close()
	out, err := s.timeline.Create(name, 0o644)
	if err != nil {
		s.rec.warnf("timeline: %v", err)
		return
	}
	defer out.Close()
	long, full, err := copyMetricLines(out, in, maxTimelineMetrics)
	switch {
	case err != nil:
		s.rec.warnf("timeline: %v", err)
	case full:
		s.rec.warnf("%s: the timeline keeps the first %d MiB of the metrics stream", label, maxTimelineMetrics>>20)
	}
	if long > 0 {
		s.rec.warnf("%s: the timeline leaves out %d metrics line(s) longer than %d KiB", label, long, jobcontract.MaxLineBytes>>10)
	}
}

// keepPointMetrics writes a point's part of its launch's stream (from its
// anchor to its end) beside its samples, as the contract's lines, at most
// maxTimelineMetrics bytes.
func (s *launcher) keepPointMetrics(pt point, its []jobcontract.Iteration) {
	if s.timeline == nil || len(its) == 0 {
		return
	}
	out, err := s.timeline.Create(pt.fileLabel()+".metrics.jsonl", 0o644)
	if err != nil {
		s.rec.warnf("timeline: %v", err)
		return
	}
	defer out.Close()
	w := bufio.NewWriter(out)
	var line []byte
	written := 0
	for _, it := range its {
		line = jobcontract.AppendIteration(line[:0], it) // one line, its newline included
		if written += len(line); written > maxTimelineMetrics {
			s.rec.warnf("%s: the timeline keeps the first %d MiB of the metrics stream", pt.label(), maxTimelineMetrics>>20)
			break
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		s.rec.warnf("timeline: %v", err)
	}
}

// maxTimelineMetrics bounds a point's copy of its metrics stream: about
// a million of the contract's 100-byte lines.
const maxTimelineMetrics = 128 << 20

// copyMetricLines copies the lines of in to out, at most max bytes, each
// line whole or not at all: a line longer than jobcontract.MaxLineBytes is
// left out (long counts them), and full says the copy stopped at max. An
// unterminated last line is copied as it is (within the bounds).
func copyMetricLines(out io.Writer, in io.Reader, max int64) (long int, full bool, err error) {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	var line []byte
	var written int64
	over := false // the line so far is longer than the bound: dropped
	for {
		frag, isPrefix, rerr := readFragment(r)
		if !over {
			if len(line)+len(frag) > jobcontract.MaxLineBytes+1 { // +1: its newline
				over, line = true, line[:0]
			} else {
				line = append(line, frag...)
			}
		}
		if isPrefix {
			continue
		}
		if over {
			long++
		} else if len(line) > 0 {
			if written+int64(len(line)) > max {
				return long, true, w.Flush()
			}
			n, werr := w.Write(line)
			written += int64(n)
			if werr != nil {
				return long, false, werr
			}
		}
		line, over = line[:0], false
		if rerr == io.EOF {
			return long, false, w.Flush()
		}
		if rerr != nil {
			return long, false, rerr
		}
	}
}

// readFragment reads up to and including the next newline, or a buffer's
// worth of a longer line (isPrefix).
func readFragment(r *bufio.Reader) (frag []byte, isPrefix bool, err error) {
	frag, err = r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return frag, true, nil
	}
	return frag, false, err
}

// stallShare is the share of the time above which a stall names the bound.
const stallShare = 0.05

// fillStalls splits every measured cell's time by DS-Analyzer's
// differential method (sensitivity.Stall), using the step-only run and the
// cached-data throughput at the same CPU count, capped by the data wait the
// job itself reported.
func fillStalls(p *sensitivity.Profile) {
	for i := range p.Cells {
		p.Cells[i].Stall = nil
	}
	if p.StepOnly == nil || p.StepOnly.Failure != nil || p.StepOnly.SamplesPerS <= 0 {
		return
	}
	tStep := 1 / p.StepOnly.SamplesPerS // seconds per sample
	for i := range p.Cells {
		c := &p.Cells[i]
		if !c.Measured || c.Failure != nil || c.SamplesPerS <= 0 {
			continue
		}
		warm := p.Cell(c.CPUs, 0)
		if warm == nil || warm.Failure != nil || warm.SamplesPerS <= 0 {
			continue
		}
		t, tWarm := 1/c.SamplesPerS, 1/warm.SamplesPerS
		if sensitivity.Unlimited(c.MemLimitBytes) {
			tWarm = t
		}
		prep := clamp01((tWarm - tStep) / t)
		fetch := math.Min(clamp01((t-tWarm)/t), 1-prep)
		// A stall is time the loop waited for data: where the job's own
		// stream says how long that was, the differences of three noisy
		// rates cannot claim more (a run slowed by a busy host is not a
		// fetch stall). Both parts shrink in proportion.
		if st := c.Stats; st != nil && st.MetricsSource == sensitivity.MetricsStream && prep+fetch > st.DataWaitFraction {
			k := st.DataWaitFraction / (prep + fetch)
			prep, fetch = prep*k, fetch*k
		}
		st := &sensitivity.Stall{PrepStallFraction: prep, FetchStallFraction: fetch, Bound: "step"}
		switch {
		case prep >= fetch && prep > stallShare:
			st.Bound = "prep"
		case fetch > prep && fetch > stallShare:
			st.Bound = "fetch"
		}
		c.Stall = st
	}
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }
