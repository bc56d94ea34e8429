package sensitivity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/internal/safefile"
)

// SchemaVersion is the version of the profile JSON this package writes and
// the newest it reads. docs/profile-format.md documents every field.
const SchemaVersion = 1

// GPU modes: where the step time of a profile came from.
const (
	GPUModeNVML     = "nvml"     // a real GPU, sampled through NVML
	GPUModeEmulated = "emulated" // the step was a timed wait (GPEmu-style)
	GPUModeNone     = "none"     // no GPU and no emulation declared
)

// Phases of a sweep: which axis a point belongs to.
const (
	PhaseCPU      = "cpu"      // memory unlimited, dataset warm
	PhaseMemory   = "memory"   // at the best CPU count, dataset cold at start
	PhaseValidate = "validate" // extra cells measured only to check a fit
	PhaseGrid     = "grid"     // every cell, measured (ground truth)
)

// Failure classes of a point.
const (
	FailCrashed     = "crashed"      // exited non-zero or by a signal we did not send
	FailOOMKilled   = "oom_killed"   // killed by the kernel's OOM killer in its cgroup
	FailTimeout     = "timeout"      // ran past the point's time cap without finishing
	FailInterrupted = "interrupted"  // the sweep was stopped (Ctrl-C) during the point
	FailStartFailed = "start_failed" // the runner could not start the job at all
	FailNoProgress  = "no_progress"  // it ran but reported no usable iterations
	// FailMalformedMetrics: the job wrote a metrics stream but no line of
	// it could be read (issue 12: never a wall-time guess then).
	FailMalformedMetrics = "malformed_metrics"
)

// Metrics sources: how a cell's throughput was measured.
const (
	MetricsStream = "metrics_stream" // per-iteration JSON lines from the job
	MetricsWall   = "wall_clock"     // job wrote nothing: the iterations it was given and ran to the end, over wall time
	// MetricsLog: no stream; the job's own log lines that --progress-regex
	// matched, each the iterations run since the one before.
	MetricsLog = "log_lines"
)

// Profile is one job's measured and predicted sensitivity to CPU and memory.
type Profile struct {
	SchemaVersion int          `json:"schema_version"`
	ToolVersion   string       `json:"tool_version"`
	CreatedAt     time.Time    `json:"created_at"`
	Job           JobInfo      `json:"job"`
	Host          HostInfo     `json:"host"`
	GPU           GPUInfo      `json:"gpu"`
	Strategy      string       `json:"strategy"`
	Axes          Axes         `json:"axes"`
	Cells         []Cell       `json:"cells"`
	Cost          Cost         `json:"cost"`
	Validation    *Validation  `json:"validation,omitempty"`
	Fit           *FitInfo     `json:"fit,omitempty"`
	Warnings      []string     `json:"warnings,omitempty"`
	Samplers      []SamplerRun `json:"samplers,omitempty"`
	// StepOnly is the run with synthetic data (no loading): the rate at
	// which the (GPU or emulated) step alone ingests samples.
	StepOnly *StepOnly `json:"step_only,omitempty"`
	// Identity is what was measured (identity.go); absent in profiles
	// written before it was recorded.
	Identity *Identity `json:"identity,omitempty"`
}

// StepOnly is DS-Analyzer's first differential run: the job with
// --synthetic-data, which measures the step's own ingestion rate.
type StepOnly struct {
	// Source says how the step was fed: StepOnlySyntheticData (the job's
	// --synthetic-data) or StepOnlyProbeReplay (the probe handed the
	// script's first batch out again, for a script that cannot be asked).
	// Empty in profiles written before it was kept.
	Source          string      `json:"source,omitempty"`
	CPUs            float64     `json:"cpus"`
	SamplesPerS     float64     `json:"samples_per_s"`
	SamplesPerSCI95 float64     `json:"samples_per_s_ci95"`
	Stats           *PointStats `json:"stats,omitempty"`
	Failure         *Failure    `json:"failure,omitempty"`
}

// Stall splits a measured cell's time per iteration by DS-Analyzer's
// differential method: with t the iteration time at the cell, t_step the
// step-only run's, and t_warm the iteration time at the same CPUs with the
// data cached, preprocessing stall = (t_warm − t_step) / t and fetch stall =
// (t − t_warm) / t, each clamped to [0, 1].
type Stall struct {
	PrepStallFraction  float64 `json:"prep_stall_fraction"`
	FetchStallFraction float64 `json:"fetch_stall_fraction"`
	// Bound names the larger stall above 5% of the time: "prep", "fetch",
	// or "step" when neither is (the job is bound by its step).
	Bound string `json:"bound"`
}

// JobInfo says what was profiled.
type JobInfo struct {
	Name          string   `json:"name"`
	Command       []string `json:"command"`
	Runner        string   `json:"runner"`
	Image         string   `json:"image,omitempty"`
	Batch         int      `json:"batch"`
	GPUs          int      `json:"gpus"`
	MaxIterations int      `json:"max_iterations"`
	DataDir       string   `json:"data_dir,omitempty"`
	// FootprintBytes is the job's own memory apart from its dataset's page
	// cache: anonymous memory plus the page cache its cgroup was charged
	// (framework libraries) at the warm, unlimited-memory points, whose
	// dataset the profiler had already read. A memory cell at or below it
	// squeezes the framework, not the dataset's cache. 0: not measured.
	FootprintBytes int64 `json:"footprint_bytes,omitempty"`
}

// How a step-only run fed the step (StepOnly.Source).
const (
	StepOnlySyntheticData = "synthetic_data"
	StepOnlyProbeReplay   = "probe_replay"
	// StepOnlyReplay: the running job replayed one batch on its control
	// channel (docs/job-contract.md), in the profile's one launch.
	StepOnlyReplay = "replay"
)

// What a point's GPU figures cover (PointStats.GPUStatsOver).
const (
	GPUStatsMeasured = "measured_iterations"
	GPUStatsLaunch   = "launch"
)

// HostInfo describes the machine the profile was measured on.
type HostInfo struct {
	Hostname    string `json:"hostname,omitempty"`
	CPUModel    string `json:"cpu_model"`
	LogicalCPUs int    `json:"logical_cpus"`
	DRAMBytes   int64  `json:"dram_bytes"`
	CgroupMode  string `json:"cgroup_mode"` // "v1", "v2", "hybrid", "none"
	// CgroupPlacement says which driver made the points' cgroups and where
	// (local runner), e.g. "v2, systemd driver: a scope per job in
	// synergy.slice".
	CgroupPlacement  string  `json:"cgroup_placement,omitempty"`
	DatasetBytes     int64   `json:"dataset_bytes"`
	DatasetFiles     int     `json:"dataset_files"`
	ColdReadMBPerS   float64 `json:"cold_read_mb_per_s"`
	ReadLimitBytesPS int64   `json:"read_limit_bytes_per_s,omitempty"`
}

// GPUInfo says whether step times came from a GPU, and which type of GPU
// they stand for.
type GPUInfo struct {
	Mode    string   `json:"mode"`
	Count   int      `json:"count"`
	Devices []string `json:"devices,omitempty"`
	// Type is the GPU type the profile's step times stand for, in the short
	// form a typed cluster names its servers' gpu_type ("v100", "a100"):
	// for mode nvml, GPUTypeFromDevice of the first device; for mode
	// emulated, the GPU whose measured step the job waited for (the
	// reference jobs' --emulate-gpu NAME), so an emulated profile names its
	// type and stays marked emulated by Mode. Empty: not known (a fixed
	// emulated step, no GPU, or a profile written before it was recorded).
	Type string `json:"type,omitempty"`
	Note string `json:"note,omitempty"`
}

// Axes are the CPU counts and memory limits the grid spans. A memory limit
// of 0 means "no limit"; it sorts last and stands for the host's DRAM.
type Axes struct {
	CPUs          []float64 `json:"cpus"`
	MemLimitBytes []int64   `json:"mem_limit_bytes"`
	// MemFrom says how the memory axis was chosen: "given" (--mem-limits,
	// --memory), from the job's measured footprint (and how), or from the
	// dataset's size alone. Empty in profiles written before it was kept.
	MemFrom string `json:"mem_from,omitempty"`
}

// Cell is one (CPUs, memory limit) point of the grid.
type Cell struct {
	CPUs          float64 `json:"cpus"`
	MemLimitBytes int64   `json:"mem_limit_bytes"`
	Measured      bool    `json:"measured"`
	Phase         string  `json:"phase,omitempty"`
	SamplesPerS   float64 `json:"samples_per_s"`
	// SamplesPerSCI95 is the 95% confidence half-width of SamplesPerS
	// (measured cells) or the fit's uncertainty (predicted cells).
	SamplesPerSCI95 float64     `json:"samples_per_s_ci95"`
	Stats           *PointStats `json:"stats,omitempty"`
	Failure         *Failure    `json:"failure,omitempty"`
	Stall           *Stall      `json:"stall,omitempty"`
}

// MarshalJSON writes a failed cell without samples_per_s and its interval:
// a failed point measured no throughput, and a 0 there reads as one to any
// reader that does not look at failure first. Reading it back gives 0.
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell
	if c.Failure == nil {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		plain
		SamplesPerS     *float64 `json:"samples_per_s,omitempty"`
		SamplesPerSCI95 *float64 `json:"samples_per_s_ci95,omitempty"`
	}{plain: plain(c)})
}

// PointStats are the figures of one measured point.
type PointStats struct {
	Workers int `json:"workers"`
	// WorkersUsed and Threads are what the job said it ran the point with,
	// read back from it over the control channel: its measured loader's
	// worker processes (0: in-process) and its intra-op threads. Absent
	// where the job does not say (no probe or helper listening).
	WorkersUsed         *int    `json:"workers_used,omitempty"`
	Threads             int     `json:"threads,omitempty"`
	Iterations          int     `json:"iterations"`
	WarmupIterations    int     `json:"warmup_iterations"`
	MetricsSource       string  `json:"metrics_source"`
	Converged           bool    `json:"converged"`
	StopReason          string  `json:"stop_reason"` // PointStop*
	IterSecondsP50      float64 `json:"iter_seconds_p50"`
	IterSecondsP95      float64 `json:"iter_seconds_p95"`
	DataWaitFraction    float64 `json:"data_wait_fraction"`
	StepSecondsMean     float64 `json:"step_seconds_mean"`
	FirstPassSamplesPS  float64 `json:"first_pass_samples_per_s,omitempty"`
	WallSeconds         float64 `json:"wall_seconds"`
	ColdStart           bool    `json:"cold_start"`
	ResidentBytesBefore int64   `json:"resident_bytes_before"`
	ExitCode            int     `json:"exit_code"`
	CPUUsageSeconds     float64 `json:"cpu_usage_seconds"`
	CPUThrottledPeriods uint64  `json:"cpu_throttled_periods"`
	CPUThrottledSeconds float64 `json:"cpu_throttled_seconds"`
	MemPeakBytes        int64   `json:"mem_peak_bytes"`
	MemCacheBytes       int64   `json:"mem_cache_bytes"`
	MemAnonBytes        int64   `json:"mem_anon_bytes"`
	IOReadBytes         int64   `json:"io_read_bytes"`
	// Unconverged says why a measured figure is not to be trusted like the
	// others: fewer iterations measured than the profile's minimum (a
	// point that hit its time cap on a slow step). Empty for a cell
	// measured over enough iterations.
	Unconverged string `json:"unconverged,omitempty"`
	// PassBoundaries counts the passes over the data that began among the
	// measured iterations, and EpochOverheadS is the mean time each added
	// beyond one iteration (validation, checkpoints, loader workers started
	// again). SamplesPerS leaves that time out: it is the rate within
	// passes. Both 0 when the job reports no epochs.
	PassBoundaries int     `json:"pass_boundaries,omitempty"`
	EpochOverheadS float64 `json:"epoch_overhead_s,omitempty"`
	// From the samplers (absent when no sample was taken).
	CPUCoresMean   float64 `json:"cpu_cores_mean,omitempty"`
	HostCPUPctMean float64 `json:"host_cpu_pct_mean,omitempty"`
	GPUUtilPctMean float64 `json:"gpu_util_pct_mean,omitempty"`
	// The other GPU figures, over the same span as GPUUtilPctMean: the
	// job's processes' share of the SMs (NVML process utilisation), the
	// devices' memory used at its peak, their power and SM clock.
	GPUJobSMUtilPctMean float64 `json:"gpu_job_sm_util_pct_mean,omitempty"`
	GPUMemUsedBytesMax  int64   `json:"gpu_mem_used_bytes_max,omitempty"`
	GPUPowerWMean       float64 `json:"gpu_power_w_mean,omitempty"`
	GPUSMClockMHzMean   float64 `json:"gpu_sm_clock_mhz_mean,omitempty"`
	// GPUStatsOver says what the GPU figures cover: "measured_iterations"
	// (from the first measured iteration to the last, the rate's span) or
	// "launch" (the whole launch, start-up included, where fewer than two
	// iterations were measured). Empty without GPU samples.
	GPUStatsOver string `json:"gpu_stats_over,omitempty"`
	// CPUSpeedMOps is the mean pace of a fixed loop timed on the point's
	// CPUs while it ran (profiler/cpuspeed), in millions of rounds per
	// CPU-second: where it differs between points, the host's CPUs ran at
	// different speeds for them.
	CPUSpeedMOps float64 `json:"cpu_speed_mops,omitempty"`
	Timeline     string  `json:"timeline,omitempty"`
	// Cost and provenance (docs/cost.md): the launch (1-based, counted over
	// the profile) whose run measured the point; whether it was measured in
	// place, in a window after a live limit change; seconds before its
	// measured iterations (start-up, warm-up or first pass, or settling
	// after the change) and of them.
	Launch int `json:"launch,omitempty"`
	// MemScale is the fraction of the dataset's bytes a scaled memory
	// point read (its sample), under ScaledMemLimitBytes instead of the
	// cell's limit; absent: the whole dataset.
	MemScale float64 `json:"mem_scale,omitempty"`
	// MeasuredPasses is, for a point measured from a cold cache, how many
	// passes over its data the measured iterations cover: whole passes
	// once one is complete, else the share of one (the point ended first).
	MeasuredPasses      float64 `json:"measured_passes,omitempty"`
	ScaledMemLimitBytes int64   `json:"scaled_mem_limit_bytes,omitempty"`
	InPlace             bool    `json:"in_place,omitempty"`
	WarmupSeconds       float64 `json:"warmup_seconds,omitempty"`
	MeasureSeconds      float64 `json:"measure_seconds,omitempty"`
}

// Failure records why a point did not produce a measurement.
type Failure struct {
	Class    string `json:"class"`
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
}

// Cost is what the profile took to make.
type Cost struct {
	Points      int     `json:"points"`
	WallSeconds float64 `json:"wall_seconds"`
	// Launches counts job starts (one launch serves every point it can,
	// changed in place); Relaunches says why each launch after a
	// profile's first was needed; StartupSeconds adds up the launches'
	// time from start to the job's first iteration. WarmupSeconds and
	// MeasureSeconds add up the points' own figures.
	Launches       int      `json:"launches,omitempty"`
	Relaunches     []string `json:"relaunches,omitempty"`
	StartupSeconds float64  `json:"startup_seconds,omitempty"`
	WarmupSeconds  float64  `json:"warmup_seconds,omitempty"`
	MeasureSeconds float64  `json:"measure_seconds,omitempty"`
	// TimeBudgetSeconds is the --time-budget the sweep ran under (0: none);
	// StopReason says how the last run of the sweep ended (SweepStop*).
	TimeBudgetSeconds float64 `json:"time_budget_seconds,omitempty"`
	StopReason        string  `json:"stop_reason,omitempty"`
	// MemScale is the share of the dataset the limited memory points were
	// measured on (1: the whole dataset) and MemScaleReason why: "given",
	// or which term of the automatic rule decided (docs/cost.md).
	MemScale       float64 `json:"mem_scale,omitempty"`
	MemScaleReason string  `json:"mem_scale_reason,omitempty"`
}

// How a measured point's iterations ended (PointStats.StopReason).
const (
	PointStopConverged = "converged"     // the confidence interval reached its target
	PointStopJobExited = "job_exited"    // the job ran to --max-iterations by itself
	PointStopIterCap   = "iteration_cap" // the measured-iteration cap was reached
	PointStopTimeCap   = "time_cap"      // the point's time cap was reached
)

// How a sweep ended (Cost.StopReason).
const (
	SweepStopComplete    = "complete"    // the strategy (and validation) ran out of points
	SweepStopTimeBudget  = "time_budget" // --time-budget was spent; the profile holds what was measured
	SweepStopInterrupted = "interrupted" // cancelled (Ctrl-C); resume continues it
)

// Validation compares predicted cells with cells measured for the check only.
type Validation struct {
	Cells           int     `json:"cells"`
	MAPEPct         float64 `json:"mape_pct"`
	WorstCPUs       float64 `json:"worst_cpus"`
	WorstMemBytes   int64   `json:"worst_mem_limit_bytes"`
	WorstErrPct     float64 `json:"worst_err_pct"`
	BaselineMAPEPct float64 `json:"baseline_mape_pct,omitempty"`
	BaselineName    string  `json:"baseline_name,omitempty"`
}

// FitInfo records the model that predicted the unmeasured cells.
type FitInfo struct {
	Model  string             `json:"model"`
	Params map[string]float64 `json:"params,omitempty"`
}

// SamplerRun records one sampler's health over the whole profile.
type SamplerRun struct {
	Name    string   `json:"name"`
	Samples int      `json:"samples"`
	Errors  []string `json:"errors,omitempty"`
}

// Unlimited reports whether a memory limit means "no limit".
func Unlimited(memLimitBytes int64) bool { return memLimitBytes <= 0 }

// memKey orders memory limits with "unlimited" last.
func memKey(b int64) float64 {
	if Unlimited(b) {
		return math.Inf(1)
	}
	return float64(b)
}

// SortCells orders cells by CPUs, then memory limit (unlimited last).
func (p *Profile) SortCells() {
	sort.SliceStable(p.Cells, func(i, j int) bool {
		a, b := p.Cells[i], p.Cells[j]
		if a.CPUs != b.CPUs {
			return a.CPUs < b.CPUs
		}
		return memKey(a.MemLimitBytes) < memKey(b.MemLimitBytes)
	})
}

// Cell returns the cell at (cpus, mem), or nil.
func (p *Profile) Cell(cpus float64, memLimitBytes int64) *Cell {
	for i := range p.Cells {
		c := &p.Cells[i]
		if c.CPUs == cpus && sameMem(c.MemLimitBytes, memLimitBytes) {
			return c
		}
	}
	return nil
}

func sameMem(a, b int64) bool {
	if Unlimited(a) || Unlimited(b) {
		return Unlimited(a) && Unlimited(b)
	}
	return a == b
}

// SetCell inserts or replaces the cell at c's coordinates, keeping order.
func (p *Profile) SetCell(c Cell) {
	if old := p.Cell(c.CPUs, c.MemLimitBytes); old != nil {
		*old = c
		return
	}
	p.Cells = append(p.Cells, c)
	p.SortCells()
}

// MeasuredOK returns the measured cells that have no failure.
func (p *Profile) MeasuredOK() []Cell {
	var out []Cell
	for _, c := range p.Cells {
		if c.Measured && c.Failure == nil {
			out = append(out, c)
		}
	}
	return out
}

// MaxProfileBytes bounds a profile file: a profile of a thousand cells
// with their stats is about a megabyte, so a larger file is not one, and a
// reader refuses it before reading it (Load) or past that many bytes
// (Decode), rather than holding whatever it is given: a reader's memory
// stays within a few MB whatever it is handed.
const MaxProfileBytes = 8 << 20

// Decode reads a profile strictly: unknown fields, trailing data, future
// versions, broken invariants and more than MaxProfileBytes are errors
// that name what is wrong.
func Decode(r io.Reader) (*Profile, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxProfileBytes {
		return nil, fmt.Errorf("profile: more than %d MiB, the bound of a profile (is it one?)", MaxProfileBytes>>20)
	}
	// Check the version first so a future file gets the right message
	// rather than an unknown-field one.
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("profile is not JSON: %w", err)
	}
	if head.SchemaVersion == nil {
		return nil, &FieldError{Field: "schema_version", Problem: "is missing (is this a synergy profile?)"}
	}
	if *head.SchemaVersion > SchemaVersion {
		return nil, versionError(*head.SchemaVersion)
	}
	if err := safefile.NoDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if dec.More() {
		return nil, errors.New("profile: trailing data after the JSON object")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Load reads and validates the profile at path: a regular file of at most
// MaxProfileBytes (a directory, a device or a FIFO is refused without
// being read, and so is a larger file, by its size).
func Load(path string) (*Profile, error) {
	f, _, err := safefile.Open(path, MaxProfileBytes, "profile")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Encode writes the profile as indented JSON.
func (p *Profile) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// Save writes the profile to path atomically: a temporary file in the same
// directory, fsync, then rename, so a reader never sees half a profile.
func (p *Profile) Save(path string) error {
	var buf bytes.Buffer
	if err := p.Encode(&buf); err != nil {
		return err
	}
	return atomicfile.Write(path, buf.Bytes(), 0o644)
}
