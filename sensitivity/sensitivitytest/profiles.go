package sensitivitytest

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

const mib = 1 << 20

// Demo returns a profile shaped like the one `make demo` writes: the audio
// preset (batch 16, one emulated GPU) over 0.5, 1 and 2 CPUs × 64, 128 and
// 384 MiB and unlimited, strategy axes (the CPU axis at unlimited memory,
// the memory axis at the best CPU count, 0.5), reads throttled to 40 MB/s,
// a step-only run, stall breakdowns, and timelines recorded under
// dir/profile.timeline/ (the files themselves are not written). The
// measurements are those of the README's table; the rest is predicted by
// sensitivity.Fill.
func Demo(dir string) *sensitivity.Profile {
	p := &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion,
		ToolVersion:   "test",
		CreatedAt:     time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Job: sensitivity.JobInfo{Name: "synthtrain", Command: []string{"bin/synthtrain", "--preset", "audio"}, Runner: "local",
			Batch: 16, GPUs: 1, MaxIterations: 100, DataDir: filepath.Join(dir, "data-audio")},
		Host: sensitivity.HostInfo{Hostname: "demo", CPUModel: "AMD EPYC 7B13", LogicalCPUs: 2, DRAMBytes: 24 << 30, CgroupMode: "hybrid",
			DatasetBytes: 256 * mib, DatasetFiles: 175, ColdReadMBPerS: 1400, ReadLimitBytesPS: 40e6},
		GPU:      sensitivity.GPUInfo{Mode: sensitivity.GPUModeEmulated, Note: "the job reported an emulated GPU step (a timed wait): throughput is not from a GPU"},
		Strategy: "axes",
		Axes:     sensitivity.Axes{CPUs: []float64{0.5, 1, 2}, MemLimitBytes: []int64{64 * mib, 128 * mib, 384 * mib, 0}},
		Cost:     sensitivity.Cost{Points: 7, WallSeconds: 291},
		Samplers: []sensitivity.SamplerRun{{Name: "host", Samples: 2910}, {Name: "cgroup", Samples: 2910}},
	}
	for _, m := range []struct {
		cpus     float64
		mem      int64
		phase    string
		rate, ci float64
	}{
		{0.5, 0, sensitivity.PhaseCPU, 388.8, 5.9},
		{1, 0, sensitivity.PhaseCPU, 388.1, 5.7},
		{2, 0, sensitivity.PhaseCPU, 387.5, 7.0},
		{0.5, 64 * mib, sensitivity.PhaseMemory, 27.8, 0.6},
		{0.5, 128 * mib, sensitivity.PhaseMemory, 32.1, 1.1},
		{0.5, 384 * mib, sensitivity.PhaseMemory, 330.0, 40.0},
	} {
		p.SetCell(measured(dir, m.cpus, m.mem, m.phase, m.rate, m.ci))
	}
	p.StepOnly = &sensitivity.StepOnly{CPUs: 2, SamplesPerS: 395.2, SamplesPerSCI95: 3.1,
		Stats: stats(dir, 2, 0, 395.2, true)}
	p.StepOnly.Stats.Timeline = filepath.Join(dir, "profile.timeline", "cpus2-steponly.samples.jsonl")
	p.StepOnly.Stats.DataWaitFraction = 0
	fill(p)
	return p
}

// Good returns Demo with one more cell measured for validation (1 CPU,
// 128 MiB), so that the profile has every block a profile can have:
// step-only, stalls, timelines, fit and validation.
func Good(dir string) *sensitivity.Profile {
	p := Demo(dir)
	p.SetCell(measured(dir, 1, 128*mib, sensitivity.PhaseValidate, 33.0, 1.2))
	p.Cost.Points++
	fill(p)
	return p
}

// fill predicts the unmeasured cells, then splits the measured cells'
// stalls as the profiler does (DS-Analyzer's differential method).
func fill(p *sensitivity.Profile) {
	if err := sensitivity.Fill(p); err != nil {
		panic("sensitivitytest: the demo profile does not fill: " + err.Error())
	}
	tStep := 1 / p.StepOnly.SamplesPerS
	for i := range p.Cells {
		c := &p.Cells[i]
		if !c.Measured || c.Failure != nil {
			continue
		}
		t, tWarm := 1/c.SamplesPerS, 1/p.Cell(c.CPUs, 0).SamplesPerS
		if c.MemLimitBytes == 0 {
			tWarm = t
		}
		prep := math.Max(0, math.Min(1, (tWarm-tStep)/t))
		fetch := math.Min(math.Max(0, math.Min(1, (t-tWarm)/t)), 1-prep)
		if w := c.Stats.DataWaitFraction; prep+fetch > w {
			prep, fetch = prep*w/(prep+fetch), fetch*w/(prep+fetch)
		}
		s := &sensitivity.Stall{PrepStallFraction: prep, FetchStallFraction: fetch, Bound: "step"}
		switch {
		case prep >= fetch && prep > 0.05:
			s.Bound = "prep"
		case fetch > prep && fetch > 0.05:
			s.Bound = "fetch"
		}
		c.Stall = s
	}
	if err := p.Validate(); err != nil {
		panic("sensitivitytest: the demo profile is not valid: " + err.Error())
	}
}

// memText is a memory limit as the profiler's file names show it.
func memText(m int64) string {
	if m == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%dMiB", m/mib)
}

// measured is one successful point of the audio job.
func measured(dir string, cpus float64, mem int64, phase string, rate, ci float64) sensitivity.Cell {
	st := stats(dir, cpus, mem, rate, mem == 0)
	return sensitivity.Cell{CPUs: cpus, MemLimitBytes: mem, Measured: true, Phase: phase, SamplesPerS: rate, SamplesPerSCI95: ci, Stats: st}
}

// stats are plausible figures of a point of the audio job at rate
// samples/s: batch 16, a 40 ms emulated step, 100 measured iterations.
func stats(dir string, cpus float64, mem int64, rate float64, warm bool) *sensitivity.PointStats {
	iter := 16 / rate
	st := &sensitivity.PointStats{
		Workers: max(1, int(math.Ceil(cpus))), Iterations: 105, WarmupIterations: 5,
		MetricsSource: sensitivity.MetricsStream, Converged: true, StopReason: "converged",
		IterSecondsP50: iter * 0.98, IterSecondsP95: iter * 1.2, DataWaitFraction: math.Max(0, 1-0.04/iter),
		StepSecondsMean: 0.04, WallSeconds: 105 * iter, ColdStart: !warm, ExitCode: -1,
		CPUUsageSeconds: 0.2 * 105 * iter, CPUThrottledPeriods: 3, CPUThrottledSeconds: 0.01,
		MemPeakBytes: 40 * mib, MemCacheBytes: 20 * mib, MemAnonBytes: 18 * mib, IOReadBytes: 256 * mib,
		CPUCoresMean: 0.2, HostCPUPctMean: 14,
		Timeline: filepath.Join(dir, "profile.timeline", fmt.Sprintf("cpus%g-mem%s.samples.jsonl", cpus, memText(mem))),
	}
	if warm {
		st.ResidentBytesBefore = 256 * mib
		st.IOReadBytes = 0
	} else {
		st.Iterations, st.WarmupIterations = 116, 16
		st.FirstPassSamplesPS = rate * 0.9
		st.MemPeakBytes, st.MemCacheBytes = mem, mem-18*mib
	}
	return st
}
