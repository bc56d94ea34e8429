package sensitivity

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/synergy-sched/synergy/internal/safefile"
)

// Bounds of a profile's numbers. A value outside them is not a measurement
// any host could have produced; the reader refuses it rather than let it
// reach an export (a CPU count of 10^18 printed as --cpus-per-gpu) or the
// scheduler.
const (
	// MinCPUs is the smallest CPU count a point can be measured at: the
	// kernel's smallest CFS quota (1 ms) over the runners' 100 ms period.
	MinCPUs = 0.01
	// MaxCPUs is Linux's largest CONFIG_NR_CPUS (x86-64 MAXSMP): no host
	// has more logical CPUs.
	MaxCPUs = 8192
	// MaxAxisValues caps each axis: every value is at least one launch of
	// the job, and a sweep of 256 CPU counts or memory limits is already
	// far past any real one.
	MaxAxisValues = 256
	// MinMemLimitBytes is the smallest memory limit the profiler has ever
	// accepted (--mem-limits' floor before issue 12): below it not even a
	// static binary's pages fit.
	MinMemLimitBytes = 4 << 20
	// MaxMemBytes (1 PiB) is beyond any single machine's DRAM (the largest
	// hold tens of TiB); a memory limit or host.dram_bytes above it is
	// not a measurement.
	MaxMemBytes = 1 << 50
	// MaxDatasetBytes (1 EiB) is beyond any dataset one job reads.
	MaxDatasetBytes = 1 << 60
	// MaxGPUs is beyond any job synergy profiles on one host (the largest
	// single systems hold 8 to 256 GPUs).
	MaxGPUs = 1024
	// MaxBatch is beyond any per-GPU batch size (2^24 samples).
	MaxBatch = 1 << 24
	// MaxIterationCap is beyond any --max-iterations (10^9).
	MaxIterationCap = 1_000_000_000
	// MaxSamplesPerS is beyond any training job's input rate: 10^9
	// samples/s is a gigabyte per second at one byte per sample.
	MaxSamplesPerS = 1e9
	// MaxSeconds (10^9 s, 31 years) is beyond any point's or profile's
	// duration.
	MaxSeconds = 1e9
	// MaxReadMBPerS (10^7 MB/s = 10 TB/s) is beyond any disk or network
	// read bandwidth one host sees.
	MaxReadMBPerS = 1e7
)

// FieldError is a profile refused by Validate: the field (a JSON path such
// as "cells[3].cpus"), the offending value as the JSON holds it ("" when
// the field is missing) and what is wrong with it.
type FieldError struct {
	Field   string
	Value   string
	Problem string
	// Where locates a cell for a reader who cannot count array indices:
	// "the cell at cpus=2 mem_limit_bytes=0".
	Where string
}

func (e *FieldError) Error() string {
	s := e.Field + ": "
	if e.Value != "" {
		s += e.Value + " "
	}
	s += e.Problem
	if e.Where != "" {
		s += " (" + e.Where + ")"
	}
	return s
}

// Values the profile's enumerated fields may take.
var (
	phases         = []string{PhaseCPU, PhaseMemory, PhaseValidate, PhaseGrid}
	failureClasses = []string{FailCrashed, FailOOMKilled, FailTimeout, FailInterrupted, FailStartFailed, FailNoProgress, FailMalformedMetrics}
	metricsSources = []string{MetricsStream, MetricsWall, MetricsLog}
	stopReasons    = []string{PointStopConverged, PointStopIterCap, PointStopTimeCap, PointStopJobExited}
	gpuModes       = []string{GPUModeNVML, GPUModeEmulated, GPUModeNone}
	cgroupModes    = []string{"", "v1", "v2", "hybrid", "none"}
	stallBounds    = []string{"prep", "fetch", "step"}
	fitModels      = []string{ModelMinGPUCPUFetch}
	baselines      = []string{"", BaselineMinIO}
	// sweepStops are Cost.StopReason's values ("" in older profiles).
	sweepStops = []string{"", SweepStopComplete, SweepStopTimeBudget, SweepStopInterrupted}
)

// checker collects the first FieldError of a profile.
type checker struct {
	err *FieldError
}

func (c *checker) fail(field, value, where, format string, a ...any) {
	if c.err == nil {
		c.err = &FieldError{Field: field, Value: value, Problem: fmt.Sprintf(format, a...), Where: where}
	}
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
func fmtI(v int64) string   { return strconv.FormatInt(v, 10) }

// float checks that v is a finite number in [lo, hi]; why explains hi.
func (c *checker) float(field, where string, v, lo, hi float64, why string) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.fail(field, fmtF(v), where, "is not a finite number")
	case v < lo && lo == 0:
		c.fail(field, fmtF(v), where, "is negative")
	case v < lo:
		c.fail(field, fmtF(v), where, "is below %s", fmtF(lo))
	case v > hi:
		c.fail(field, fmtF(v), where, "is above %s: %s", fmtF(hi), why)
	}
}

// int checks that v is in [lo, hi]; why explains hi.
func (c *checker) int(field, where string, v, lo, hi int64, why string) {
	switch {
	case v < lo && lo == 0:
		c.fail(field, fmtI(v), where, "is negative")
	case v < lo:
		c.fail(field, fmtI(v), where, "is below %d", lo)
	case v > hi:
		c.fail(field, fmtI(v), where, "is above %d: %s", hi, why)
	}
}

// oneOf checks that v is one of allowed.
func (c *checker) oneOf(field, where, v string, allowed []string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	var named []string
	for _, a := range allowed {
		if a != "" {
			named = append(named, a)
		}
	}
	c.fail(field, strconv.Quote(v), where, "is not one of %s", strings.Join(named, ", "))
}

// printable checks that a name holds no control characters (a newline in
// a name would forge lines in tables and YAML) nor bidirectional-text
// controls (they make one name read as another), and is at most
// safefile.MaxNameBytes long (a 7 MB name was echoed whole).
func (c *checker) printable(field, s string) {
	if why := safefile.TextProblem(s, safefile.MaxNameBytes); why != "" {
		c.fail(field, strconv.Quote(safefile.Clip(s, 64)), "", "%s", why)
	}
}

// Validate checks the profile as a whole: its version, every field against
// the bounds above, every cell on the axes and once only, measured and
// failed cells with what they need and nothing they cannot have, and the
// fit, validation and step-only blocks against the cells. The error is a
// *FieldError naming the first bad field (a JSON path) and its value.
func (p *Profile) Validate() error {
	var c checker
	c.version(p.SchemaVersion)
	c.job(&p.Job)
	c.host(&p.Host)
	c.oneOf("gpu.mode", "", p.GPU.Mode, gpuModes)
	c.int("gpu.count", "", int64(p.GPU.Count), 0, MaxGPUs, "more GPUs than any host holds")
	c.gpuType(&p.GPU)
	c.printable("strategy", p.Strategy)
	c.axes(p)
	c.cells(p)
	if p.StepOnly != nil {
		c.stepOnly(p.StepOnly, p.Host.LogicalCPUs)
	}
	c.fit(p)
	c.validation(p)
	if p.Identity != nil {
		c.identity(p.Identity)
	}
	c.float("cost.wall_seconds", "", p.Cost.WallSeconds, 0, MaxSeconds, "longer than any profile runs")
	c.int("cost.points", "", int64(p.Cost.Points), 0, MaxIterationCap, "more launches than any sweep makes")
	c.int("cost.launches", "", int64(p.Cost.Launches), 0, MaxIterationCap, "more launches than any sweep makes")
	c.oneOf("cost.stop_reason", "", p.Cost.StopReason, sweepStops)
	for i, s := range p.Samplers {
		f := fmt.Sprintf("samplers[%d]", i)
		if s.Name == "" {
			c.fail(f+".name", `""`, "", "is empty")
		}
		c.int(f+".samples", "", int64(s.Samples), 0, math.MaxInt64, "")
	}
	if c.err != nil {
		return c.err
	}
	return nil
}

// versionError refuses a schema version this tool cannot read (nil if it
// can).
func versionError(v int) error {
	var c checker
	c.version(v)
	if c.err != nil {
		return c.err
	}
	return nil
}

func (c *checker) version(v int) {
	switch {
	case v > SchemaVersion:
		c.fail("schema_version", strconv.Itoa(v), "", "is newer than this tool reads (%d); upgrade synergy", SchemaVersion)
	case v < 1:
		c.fail("schema_version", strconv.Itoa(v), "", "is not a valid version (versions start at 1)")
	}
}

func (c *checker) job(j *JobInfo) {
	c.printable("job.name", j.Name)
	c.printable("job.runner", j.Runner) // any runner.Runner's Name()
	c.int("job.batch", "", int64(j.Batch), 1, MaxBatch, "larger than any per-GPU batch")
	c.int("job.gpus", "", int64(j.GPUs), 0, MaxGPUs, "more GPUs than any job synergy profiles on one host")
	c.int("job.max_iterations", "", int64(j.MaxIterations), 0, MaxIterationCap, "more iterations than any point runs")
	c.int("job.footprint_bytes", "", j.FootprintBytes, 0, MaxMemBytes, "more memory than any machine holds")
}

func (c *checker) host(h *HostInfo) {
	c.int("host.logical_cpus", "", int64(h.LogicalCPUs), 0, MaxCPUs, "more CPUs than Linux supports")
	c.int("host.dram_bytes", "", h.DRAMBytes, 0, MaxMemBytes, "more DRAM than any machine holds")
	c.oneOf("host.cgroup_mode", "", h.CgroupMode, cgroupModes)
	c.int("host.dataset_bytes", "", h.DatasetBytes, 0, MaxDatasetBytes, "larger than any dataset")
	c.int("host.dataset_files", "", int64(h.DatasetFiles), 0, MaxDatasetBytes, "more files than bytes in any dataset")
	if h.DatasetBytes > 0 && h.DatasetFiles == 0 {
		c.fail("host.dataset_files", "0", "", "with host.dataset_bytes = %d: a dataset of bytes needs files to hold them", h.DatasetBytes)
	}
	c.float("host.cold_read_mb_per_s", "", h.ColdReadMBPerS, 0, MaxReadMBPerS, "faster than any disk or network")
	c.int("host.read_limit_bytes_per_s", "", h.ReadLimitBytesPS, 0, MaxReadMBPerS*1e6, "faster than any disk or network")
}

// axes checks both axes: non-empty, bounded, ascending (unlimited memory
// last), CPU counts the host could pin, memory limits below its DRAM.
func (c *checker) axes(p *Profile) {
	a := &p.Axes
	if len(a.CPUs) == 0 {
		c.fail("axes.cpus", "[]", "", "is empty: a profile needs at least one CPU count")
	}
	if len(a.MemLimitBytes) == 0 {
		c.fail("axes.mem_limit_bytes", "[]", "", "is empty: a profile needs at least one memory limit (0 = unlimited)")
	}
	if len(a.CPUs) > MaxAxisValues {
		c.fail("axes.cpus", fmt.Sprintf("%d values", len(a.CPUs)), "", "is more than %d: no sweep launches that many points", MaxAxisValues)
	}
	if len(a.MemLimitBytes) > MaxAxisValues {
		c.fail("axes.mem_limit_bytes", fmt.Sprintf("%d values", len(a.MemLimitBytes)), "", "is more than %d: no sweep launches that many points", MaxAxisValues)
	}
	for i, v := range a.CPUs {
		f := fmt.Sprintf("axes.cpus[%d]", i)
		c.float(f, "", v, MinCPUs, MaxCPUs, "more CPUs than Linux supports")
		if i > 0 && !(v > a.CPUs[i-1]) {
			c.fail(f, fmtF(v), "", "is not above the previous value %s (the axis ascends)", fmtF(a.CPUs[i-1]))
		}
		if n := p.Host.LogicalCPUs; n > 0 && v <= MaxCPUs && math.Ceil(v) > float64(n) {
			c.fail(f, fmtF(v), "", "needs %v pinned cores but host.logical_cpus is %d", math.Ceil(v), n)
		}
	}
	unlimited := false
	for i, m := range a.MemLimitBytes {
		f := fmt.Sprintf("axes.mem_limit_bytes[%d]", i)
		if m < 0 {
			c.fail(f, fmtI(m), "", "is negative (0 means unlimited)")
			continue
		}
		if Unlimited(m) {
			unlimited = true
		} else {
			c.int(f, "", m, MinMemLimitBytes, MaxMemBytes, "more memory than any machine holds")
			if d := p.Host.DRAMBytes; d > 0 && m >= d {
				c.fail(f, fmtI(m), "", "is not below host.dram_bytes (%d): a limit at or above the host's memory is no limit, and the unlimited column stands at the host's DRAM", d)
			}
		}
		if i > 0 && memKey(m) <= memKey(a.MemLimitBytes[i-1]) {
			c.fail(f, fmtI(m), "", "is not above the previous value %d (the axis ascends; 0 = unlimited goes last)", a.MemLimitBytes[i-1])
		}
	}
	if unlimited && p.Host.DRAMBytes <= 0 {
		c.fail("host.dram_bytes", fmtI(p.Host.DRAMBytes), "", "is needed: the unlimited memory column stands at the host's DRAM")
	}
}

// cellWhere names a cell by its coordinates.
func cellWhere(cl *Cell) string {
	return fmt.Sprintf("the cell at cpus=%s mem_limit_bytes=%d", fmtF(cl.CPUs), cl.MemLimitBytes)
}

func (c *checker) cells(p *Profile) {
	onCPU := map[float64]bool{}
	for _, v := range p.Axes.CPUs {
		onCPU[v] = true
	}
	onMem := map[int64]bool{}
	for _, m := range p.Axes.MemLimitBytes {
		onMem[m] = true
	}
	seen := map[[2]float64]int{}
	measuredOK := 0
	firstPredicted := -1
	for i := range p.Cells {
		cl := &p.Cells[i]
		f := fmt.Sprintf("cells[%d]", i)
		w := cellWhere(cl)
		if !onCPU[cl.CPUs] {
			c.fail(f+".cpus", fmtF(cl.CPUs), w, "is not a value of axes.cpus %s", fmtFloats(p.Axes.CPUs))
		}
		if !onMem[cl.MemLimitBytes] {
			c.fail(f+".mem_limit_bytes", fmtI(cl.MemLimitBytes), w, "is not a value of axes.mem_limit_bytes %s", fmtInts(p.Axes.MemLimitBytes))
		}
		k := [2]float64{cl.CPUs, memKey(cl.MemLimitBytes)}
		if j, dup := seen[k]; dup {
			c.fail(f, "", w, "duplicates cells[%d]: one cell per grid point", j)
		}
		seen[k] = i
		c.float(f+".samples_per_s", w, cl.SamplesPerS, 0, MaxSamplesPerS, "faster than any training job's input")
		c.float(f+".samples_per_s_ci95", w, cl.SamplesPerSCI95, 0, MaxSamplesPerS, "wider than any throughput")
		if !cl.Measured {
			if firstPredicted < 0 {
				firstPredicted = i
			}
			switch {
			case cl.Phase != "":
				c.fail(f+".phase", strconv.Quote(cl.Phase), w, "is set on a predicted cell (measured: false): only a measured cell has a phase")
			case cl.Failure != nil:
				c.fail(f+".failure", "", w, "is set on a predicted cell (measured: false): only a measured cell can fail")
			case cl.Stats != nil:
				c.fail(f+".stats", "", w, "is set on a predicted cell (measured: false): only a measured cell has stats")
			case cl.Stall != nil:
				c.fail(f+".stall", "", w, "is set on a predicted cell (measured: false): only a measured cell has a stall breakdown")
			}
			continue
		}
		c.oneOf(f+".phase", w, cl.Phase, phases)
		if cl.Phase == PhaseCPU && !Unlimited(cl.MemLimitBytes) {
			c.fail(f+".phase", strconv.Quote(cl.Phase), w, "is measured with memory unlimited, but the cell has a limit")
		}
		if cl.Failure != nil {
			c.failure(f, w, cl.Failure, cl.SamplesPerS, cl.SamplesPerSCI95)
			if cl.Stall != nil {
				c.fail(f+".stall", "", w, "is set on a failed cell: a point that measured nothing has no stall breakdown")
			}
		} else {
			measuredOK++
			if !(cl.SamplesPerS > 0) {
				c.fail(f+".samples_per_s", fmtF(cl.SamplesPerS), w, "on a measured cell without a failure: a point that measured no throughput records its failure")
			}
		}
		if cl.Stats != nil {
			c.stats(f+".stats", w, cl.Stats, cl.CPUs, cl.Failure == nil)
		}
		if cl.Stall != nil {
			c.stall(f+".stall", w, cl.Stall)
		}
	}
	if firstPredicted >= 0 && measuredOK == 0 {
		cl := &p.Cells[firstPredicted]
		c.fail(fmt.Sprintf("cells[%d].measured", firstPredicted), "false", cellWhere(cl), "but no cell was measured successfully: nothing to predict it from")
	}
}

// failure checks a failed point: a known class and no throughput claimed.
func (c *checker) failure(f, w string, fl *Failure, rate, ci float64) {
	c.oneOf(f+".failure.class", w, fl.Class, failureClasses)
	if rate != 0 {
		c.fail(f+".samples_per_s", fmtF(rate), w, "on a failed point (failure.class %q): a failed point measured no throughput, so it records 0", fl.Class)
	}
	if ci != 0 {
		c.fail(f+".samples_per_s_ci95", fmtF(ci), w, "on a failed point (failure.class %q): a failed point has no interval, so it records 0", fl.Class)
	}
}

// stats checks a point's figures; ok says the point succeeded, which needs
// how it was measured and why it stopped.
func (c *checker) stats(f, w string, st *PointStats, cpus float64, ok bool) {
	c.int(f+".workers", w, int64(st.Workers), 0, MaxCPUs, "more loader workers than CPUs")
	if st.WorkersUsed != nil {
		c.int(f+".workers_used", w, int64(*st.WorkersUsed), 0, 1<<20, "more loader workers than any job starts")
	}
	c.int(f+".threads", w, int64(st.Threads), 0, 1<<20, "more threads than any job starts")
	c.int(f+".iterations", w, int64(st.Iterations), 0, 1<<40, "more iterations than any point runs")
	c.int(f+".warmup_iterations", w, int64(st.WarmupIterations), 0, int64(st.Iterations), "more than the point's iterations")
	if st.MetricsSource != "" || ok {
		c.oneOf(f+".metrics_source", w, st.MetricsSource, metricsSources)
	}
	if st.StopReason != "" || ok {
		c.oneOf(f+".stop_reason", w, st.StopReason, stopReasons)
	}
	if ok {
		if st.Workers < 1 {
			c.fail(f+".workers", fmtI(int64(st.Workers)), w, "on a measured point: the job ran with at least one loader worker")
		}
		if st.Iterations < 1 {
			c.fail(f+".iterations", fmtI(int64(st.Iterations)), w, "on a measured point: a measurement needs iterations")
		}
	}
	for _, x := range []struct {
		name string
		v    float64
	}{
		{"iter_seconds_p50", st.IterSecondsP50}, {"iter_seconds_p95", st.IterSecondsP95},
		{"step_seconds_mean", st.StepSecondsMean}, {"wall_seconds", st.WallSeconds},
		{"cpu_usage_seconds", st.CPUUsageSeconds}, {"cpu_throttled_seconds", st.CPUThrottledSeconds},
	} {
		c.float(f+"."+x.name, w, x.v, 0, MaxSeconds, "longer than any point runs")
	}
	if st.IterSecondsP95 < st.IterSecondsP50 {
		c.fail(f+".iter_seconds_p95", fmtF(st.IterSecondsP95), w, "is below iter_seconds_p50 (%s)", fmtF(st.IterSecondsP50))
	}
	c.float(f+".data_wait_fraction", w, st.DataWaitFraction, 0, 1, "a fraction of the time")
	c.float(f+".first_pass_samples_per_s", w, st.FirstPassSamplesPS, 0, MaxSamplesPerS, "faster than any training job's input")
	for _, x := range []struct {
		name string
		v    int64
	}{
		{"resident_bytes_before", st.ResidentBytesBefore}, {"mem_peak_bytes", st.MemPeakBytes},
		{"mem_cache_bytes", st.MemCacheBytes}, {"mem_anon_bytes", st.MemAnonBytes},
	} {
		c.int(f+"."+x.name, w, x.v, 0, MaxMemBytes, "more memory than any machine holds")
	}
	c.int(f+".io_read_bytes", w, st.IOReadBytes, 0, math.MaxInt64, "")
	c.float(f+".cpu_cores_mean", w, st.CPUCoresMean, 0, MaxCPUs, "more CPUs than Linux supports")
	c.float(f+".host_cpu_pct_mean", w, st.HostCPUPctMean, 0, 100+1e-6, "a percentage")
	c.float(f+".gpu_util_pct_mean", w, st.GPUUtilPctMean, 0, 100+1e-6, "a percentage")
	c.float(f+".gpu_job_sm_util_pct_mean", w, st.GPUJobSMUtilPctMean, 0, 100+1e-6, "a percentage")
	c.int(f+".gpu_mem_used_bytes_max", w, st.GPUMemUsedBytesMax, 0, MaxMemBytes, "more memory than any machine holds")
	c.float(f+".gpu_power_w_mean", w, st.GPUPowerWMean, 0, 1e6, "more power than any machine draws")
	c.float(f+".gpu_sm_clock_mhz_mean", w, st.GPUSMClockMHzMean, 0, 1e5, "faster than any GPU")
	c.oneOf(f+".gpu_stats_over", "", st.GPUStatsOver, []string{"", GPUStatsMeasured, GPUStatsLaunch})
	c.float(f+".cpu_speed_mops", w, st.CPUSpeedMOps, 0, 1e6, "faster than any CPU")
	c.float(f+".measured_passes", w, st.MeasuredPasses, 0, 1e9, "")
	c.int(f+".pass_boundaries", w, int64(st.PassBoundaries), 0, math.MaxInt32, "")
	c.float(f+".epoch_overhead_s", w, st.EpochOverheadS, 0, 1e7, "longer than any point runs")
	if st.Timeline != "" {
		c.timeline(f+".timeline", w, st.Timeline, cpus)
	}
}

// timeline checks a point's samples file path as the profiler writes it:
// OUT-stem.timeline/cpus{C}-{mem or steponly}.samples.jsonl, clean, in a
// *.timeline directory it cannot leave, named for the point's CPU count.
// Absolute paths and a leading "../" (from --out as given) are allowed.
func (c *checker) timeline(f, w, path string, cpus float64) {
	q := strconv.Quote(path)
	dir, base := filepath.Split(path)
	switch {
	case strings.IndexFunc(path, unicode.IsControl) >= 0:
		c.fail(f, q, w, "holds a control character")
	case filepath.Clean(path) != path:
		c.fail(f, q, w, "is not a clean path (it would read as %q): the profiler records clean paths", filepath.Clean(path))
	case !strings.HasSuffix(base, ".samples.jsonl"):
		c.fail(f, q, w, "is not a *.samples.jsonl file")
	case dir == "" || !strings.HasSuffix(filepath.Base(dir), ".timeline"):
		c.fail(f, q, w, "does not lie in the profile's OUT.timeline/ directory: a timeline path cannot point elsewhere")
	case !strings.HasPrefix(base, fmt.Sprintf("cpus%g-", cpus)):
		c.fail(f, q, w, "is not this point's file (cpus%g-...): it names another point", cpus)
	}
}

func (c *checker) stall(f, w string, s *Stall) {
	c.float(f+".prep_stall_fraction", w, s.PrepStallFraction, 0, 1, "a fraction of the time")
	c.float(f+".fetch_stall_fraction", w, s.FetchStallFraction, 0, 1, "a fraction of the time")
	if sum := s.PrepStallFraction + s.FetchStallFraction; sum > 1+1e-9 {
		c.fail(f+".fetch_stall_fraction", fmtF(s.FetchStallFraction), w, "with prep_stall_fraction %s adds up to %s, more than the whole iteration", fmtF(s.PrepStallFraction), fmtF(sum))
	}
	c.oneOf(f+".bound", w, s.Bound, stallBounds)
}

func (c *checker) stepOnly(s *StepOnly, hostCPUs int) {
	const f = "step_only"
	c.float(f+".cpus", "", s.CPUs, MinCPUs, MaxCPUs, "more CPUs than Linux supports")
	if hostCPUs > 0 && s.CPUs <= MaxCPUs && math.Ceil(s.CPUs) > float64(hostCPUs) {
		c.fail(f+".cpus", fmtF(s.CPUs), "", "needs %v pinned cores but host.logical_cpus is %d", math.Ceil(s.CPUs), hostCPUs)
	}
	c.float(f+".samples_per_s", "", s.SamplesPerS, 0, MaxSamplesPerS, "faster than any training job's input")
	c.float(f+".samples_per_s_ci95", "", s.SamplesPerSCI95, 0, MaxSamplesPerS, "wider than any throughput")
	if s.Failure != nil {
		c.failure(f, "", s.Failure, s.SamplesPerS, s.SamplesPerSCI95)
	} else if !(s.SamplesPerS > 0) {
		c.fail(f+".samples_per_s", fmtF(s.SamplesPerS), "", "without a failure: a run that measured no throughput records its failure")
	}
	if s.Stats != nil {
		c.stats(f+".stats", "", s.Stats, s.CPUs, s.Failure == nil)
	}
}

// fit checks the fit block against the cells: a known model, finite
// non-negative parameters, and measured cells to have been fitted on.
func (c *checker) fit(p *Profile) {
	if p.Fit == nil {
		return
	}
	c.oneOf("fit.model", "", p.Fit.Model, fitModels)
	ok := len(p.MeasuredOK())
	keys := make([]string, 0, len(p.Fit.Params))
	for k := range p.Fit.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p.Fit.Params[k]
		f := "fit.params." + k
		if k == "" {
			c.fail("fit.params", `""`, "", "has an empty key")
		}
		c.float(f, "", v, 0, math.MaxFloat64, "")
	}
	if ok == 0 {
		c.fail("fit.model", strconv.Quote(p.Fit.Model), "", "is recorded but no cell was measured successfully: nothing to fit on")
	} else if n, has := p.Fit.Params["cpu_points"]; has && n > float64(ok) {
		c.fail("fit.params.cpu_points", fmtF(n), "", "is more than the %d successfully measured cells", ok)
	}
}

// validation checks the validation block against the cells measured for
// it (phase "validate").
func (c *checker) validation(p *Profile) {
	v := p.Validation
	if v == nil {
		return
	}
	n := 0
	worst := false
	for _, cl := range p.Cells {
		if cl.Measured && cl.Phase == PhaseValidate && cl.Failure == nil {
			n++
			worst = worst || (cl.CPUs == v.WorstCPUs && sameMem(cl.MemLimitBytes, v.WorstMemBytes))
		}
	}
	c.int("validation.cells", "", int64(v.Cells), 1, int64(n), fmt.Sprintf("more than the %d successful cells measured for validation (phase %q)", n, PhaseValidate))
	c.float("validation.mape_pct", "", v.MAPEPct, 0, math.MaxFloat64, "")
	c.float("validation.worst_err_pct", "", v.WorstErrPct, 0, math.MaxFloat64, "")
	c.float("validation.baseline_mape_pct", "", v.BaselineMAPEPct, 0, math.MaxFloat64, "")
	c.oneOf("validation.baseline_name", "", v.BaselineName, baselines)
	if n > 0 && !worst {
		c.fail("validation.worst_cpus", fmtF(v.WorstCPUs), "", "with worst_mem_limit_bytes %d is not a cell measured for validation", v.WorstMemBytes)
	}
}

func fmtFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmtF(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func fmtInts(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmtI(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
