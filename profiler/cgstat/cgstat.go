package cgstat

import (
	"time"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// Series names written by Put.
const (
	SeriesCPUUsageS          = "cg_cpu_usage_s"
	SeriesCPUPeriods         = "cg_cpu_periods"
	SeriesCPUThrottledPeriod = "cg_cpu_throttled_periods"
	SeriesCPUThrottledS      = "cg_cpu_throttled_s"
	SeriesMemUsageBytes      = "cg_mem_usage_bytes"
	SeriesMemPeakBytes       = "cg_mem_peak_bytes"
	SeriesMemCacheBytes      = "cg_mem_cache_bytes"
	SeriesMemAnonBytes       = "cg_mem_anon_bytes"
	SeriesOOMKills           = "cg_mem_oom_kills"
	SeriesIOReadBytes        = "cg_io_read_bytes"
)

// Put sets the counters of st that were read (st.Has) on rec; absent ones
// stay absent ("no data").
func Put(st runner.Stats, rec *sample.Record) {
	set := func(f runner.StatField, name string, v float64) {
		if st.Has&f != 0 {
			rec.Set(name, v)
		}
	}
	set(runner.StatCPUUsage, SeriesCPUUsageS, st.CPUUsageSeconds)
	set(runner.StatCPUPeriods, SeriesCPUPeriods, float64(st.CPUPeriods))
	set(runner.StatCPUThrottledPeriods, SeriesCPUThrottledPeriod, float64(st.CPUThrottledPeriods))
	set(runner.StatCPUThrottledSeconds, SeriesCPUThrottledS, st.CPUThrottledSeconds)
	set(runner.StatMemUsage, SeriesMemUsageBytes, float64(st.MemUsageBytes))
	set(runner.StatMemPeak, SeriesMemPeakBytes, float64(st.MemPeakBytes))
	set(runner.StatMemCache, SeriesMemCacheBytes, float64(st.MemCacheBytes))
	set(runner.StatMemAnon, SeriesMemAnonBytes, float64(st.MemAnonBytes))
	set(runner.StatOOMEvents, SeriesOOMKills, float64(st.OOMEvents))
	set(runner.StatIORead, SeriesIOReadBytes, float64(st.IOReadBytes))
}

// Sampler adapts a cgroupfs.Reader to profiler/sample under the name
// "cgroup".
type Sampler struct {
	r       *cgroupfs.Reader
	observe func(runner.Stats)
}

var _ sample.Sampler = (*Sampler)(nil)

// NewSampler returns a sampler reading r. observe, when not nil, receives
// every read that had no error, on the sampling loop's goroutine: the
// point's one reader of its cgroup files can feed other users of the
// counters. Closing r stays the caller's job.
func NewSampler(r *cgroupfs.Reader, observe func(runner.Stats)) *Sampler {
	return &Sampler{r: r, observe: observe}
}

// Name is "cgroup".
func (s *Sampler) Name() string { return "cgroup" }

// Sample puts whatever counters were read, and returns the read errors.
func (s *Sampler) Sample(now time.Time, out *sample.Record) error {
	st, err := s.r.Read(now)
	Put(st, out)
	if err == nil && s.observe != nil {
		s.observe(st)
	}
	return err
}
