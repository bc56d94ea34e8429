package profiler

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/synergy-sched/synergy/profiler/cgstat"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/sensitivity"
)

// pointSampling runs the sampling loop while one point runs: the sweep's
// own samplers (host, GPU) plus a reader of the point's cgroup files.
type pointSampling struct {
	loop   *sample.Loop
	agg    *sample.Aggregator
	file   *os.File
	cancel context.CancelFunc
	wg     sync.WaitGroup
	path   string
}

// startSampling starts sampling a running point; nil when there is nothing
// to sample with.
func (s *sweep) startSampling(h runner.Handle, pt point) (*pointSampling, error) {
	samplers := append([]sample.Sampler(nil), s.cfg.Samplers...)
	if paths := h.CgroupPaths(); len(paths) > 0 {
		r, err := cgroupfs.Open(paths)
		if err != nil {
			s.warnf("%s: cgroup sampler: %v", pt.label(), err)
		} else {
			samplers = append(samplers, cgstat.NewSampler(r, nil))
		}
	}
	if len(samplers) == 0 {
		return nil, nil
	}
	ps := &pointSampling{agg: sample.NewAggregator()}
	sink := sample.Sink(ps.agg)
	if s.cfg.TimelineDir != "" {
		ps.path = filepath.Join(s.cfg.TimelineDir, pt.fileLabel()+".samples.jsonl")
		f, err := os.Create(ps.path)
		if err != nil {
			return nil, fmt.Errorf("timeline: %w", err)
		}
		ps.file = f
		sink = sample.Tee(ps.agg, sample.NewJSONLWriter(f))
	}
	loop, err := sample.NewLoop(s.cfg.SampleInterval, sink, samplers...)
	if err != nil {
		if ps.file != nil {
			ps.file.Close()
		}
		return nil, err
	}
	ps.loop = loop
	ctx, cancel := context.WithCancel(context.Background())
	ps.cancel = cancel
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		loop.Run(ctx)
	}()
	return ps, nil
}

// stop ends sampling, records the aggregates in stats and the samplers'
// health in the sweep.
func (ps *pointSampling) stop(s *sweep, st *sensitivity.PointStats) {
	if ps == nil {
		return
	}
	ps.cancel()
	ps.wg.Wait()
	if ps.file != nil {
		ps.file.Close()
		st.Timeline = ps.path
	}
	if sum, ok := ps.agg.Summary("host_cpu_pct"); ok {
		st.HostCPUPctMean = sum.Mean
	}
	if sum, ok := ps.agg.Summary(cgstat.SeriesCPUUsageS); ok && sum.Count > 1 {
		if dt := sum.LastTime.Sub(sum.FirstTime).Seconds(); dt > 0 {
			st.CPUCoresMean = sum.Delta() / dt
		}
	}
	var gpu []float64
	for _, name := range ps.agg.Names() {
		if strings.HasPrefix(name, "gpu") && strings.HasSuffix(name, "_util_pct") && !strings.Contains(name, "job") && !strings.Contains(name, "mem") {
			if sum, ok := ps.agg.Summary(name); ok {
				gpu = append(gpu, sum.Mean)
			}
		}
	}
	if len(gpu) > 0 {
		var t float64
		for _, g := range gpu {
			t += g
		}
		st.GPUUtilPctMean = t / float64(len(gpu))
	}
	for _, h := range ps.loop.Health() {
		s.addHealth(h)
	}
}

// addHealth merges one point's sampler health into the profile's.
func (s *sweep) addHealth(h sample.Health) {
	for i := range s.prof.Samplers {
		r := &s.prof.Samplers[i]
		if r.Name != h.Name {
			continue
		}
		r.Samples += h.Samples
		for _, e := range h.Errors {
			if len(r.Errors) < sample.MaxDistinctErrors && !slices.Contains(r.Errors, e) {
				r.Errors = append(r.Errors, e)
			}
		}
		return
	}
	s.prof.Samplers = append(s.prof.Samplers, sensitivity.SamplerRun{Name: h.Name, Samples: h.Samples, Errors: append([]string(nil), h.Errors...)})
}

// keepMetrics copies a point's metrics stream next to its samples.
func (s *sweep) keepMetrics(pt point, src string) {
	if s.cfg.TimelineDir == "" {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		return // the job wrote no stream
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(s.cfg.TimelineDir, pt.fileLabel()+".metrics.jsonl"))
	if err != nil {
		s.warnf("timeline: %v", err)
		return
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		s.warnf("timeline: %v", err)
	}
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
