package profiler

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Config says what to profile and how. The CLI fills it from flags; tests
// fill it directly.
type Config struct {
	// Command is the training script and the user's own arguments. The
	// contract flags (--batch, --workers, --max-iterations, --data) are
	// appended last for every point, unless the command is a template
	// ({workers}, {batch}, {data}, {iterations}: jobargs.go), expanded per
	// point with nothing appended.
	Command []string
	JobName string
	Batch   int
	GPUs    int
	// MaxIterations caps the iterations measured at one point (after
	// warm-up, and after the first pass over the data for memory points).
	MaxIterations int
	DataDir       string

	// CPUs is the CPU axis, in cores (fractions allowed: 0.5 is half a core
	// of quota on one pinned core).
	CPUs []float64
	// MemLimits is the memory axis, in bytes, limited values only: the
	// unlimited column is always part of the grid and comes from the CPU
	// sweep.
	MemLimits []int64
	// MemAxisFromJob says MemLimits was drawn from the dataset alone, as a
	// placeholder: once the unlimited points have measured the job's own
	// memory, and before any limited point, the axis is set from that
	// footprint (fitMemAxis), and a limit at or below the footprint is
	// never launched (predictedOOM).
	MemAxisFromJob bool
	// ReadBPS throttles reads from the dataset's block device (bytes/s).
	ReadBPS int64

	// Strategy chooses the points (StrategyOptimistic by default).
	Strategy string
	// Budget caps the points of the optimistic strategy (0: DefaultBudget,
	// or NoPointCap under a TimeBudget: the time bounds it).
	Budget int
	// ValidateCells is the number of extra cells measured after the
	// strategy only to check the fit's predictions (phase "validate").
	ValidateCells int

	// Out is the profile path; it is saved after every point.
	Out string
	// Resume continues the profile at Out, skipping measured points.
	Resume bool

	// Warmup is the number of iterations dropped at the start of a point
	// (0: the default; negative: none).
	Warmup int
	// MinIterations is the fewest measured iterations before a point may
	// stop early.
	MinIterations int
	// TargetRelCI stops a point once the 95% confidence half-width of
	// samples/s is within this fraction of the mean (0.02 = 2%).
	TargetRelCI float64
	// PointTimeout caps one point's wall time.
	PointTimeout time.Duration
	// Poll is how often the metrics stream is read.
	Poll time.Duration

	// Env is added to every point's environment, after the thread counts
	// (ThreadEnv) it may override.
	Env []string
	// JobSetup: the DataLoader probe and its loader-only mode (probe.go).
	JobSetup
	// Image is the container image the runner runs the job in ("" for
	// the local runner), recorded in the profile's identity.
	Image string
	// SampleInterval is how often the samplers (Deps.Samplers and the
	// reader of the point's own cgroup) sample while a point runs.
	SampleInterval time.Duration
	// TimelineDir receives each point's samples and metrics stream as JSON
	// lines (docs/profile-format.md); "" keeps none.
	TimelineDir string
	// StallBreakdown measures the job's step alone once (the step-only run:
	// the running job replays one batch over its control channel, or a
	// launch with --synthetic-data), so each measured cell's stall can be
	// split into preprocessing and fetch.
	StallBreakdown bool

	// Relaunch starts the job afresh for every point instead of changing
	// the running launch in place: slower, for checking in-place figures
	// against restarts (docs/cost.md, "One launch").
	Relaunch bool
	// TimeBudget bounds this run of the sweep: once spent, it stops between
	// points, saves the profile and records the stop reason (0: none).
	TimeBudget time.Duration
	// MemScale, in (0,1), measures each limited memory point on a random
	// sample of MemScale of the dataset's bytes under a limit scaled the
	// same way around the job's own memory (docs/cost.md); 0 or 1: the
	// whole dataset.
	MemScale float64

	// LogDir receives each point's stdout and stderr; "" discards them.
	LogDir string
}

// Deps are what a sweep works with and reports to, beside its settings:
// the runner, the page cache, progress, the samplers, the host's facts
// and the clock.
type Deps struct {
	Runner runner.Runner
	// Cache evicts and warms the dataset's page cache; nil means the
	// profiler cannot control it (the profile then carries a warning).
	Cache Cache
	// Progress receives per-point progress; nil is silent.
	Progress Progress
	// Samplers run at Config.SampleInterval while every point runs (host,
	// GPU); a reader of the point's own cgroup is added to them.
	Samplers    []sample.Sampler
	Host        sensitivity.HostInfo
	GPU         sensitivity.GPUInfo
	ToolVersion string
	// Now is the clock (tests may fix it); nil means time.Now.
	Now func() time.Time
}

// Cache controls the page cache of the dataset.
type Cache interface {
	// Evict drops the cached pages of every file under dir.
	Evict(dir string) (files int, err error)
	// Resident reports how many bytes of the files under dir are cached.
	Resident(dir string) (residentBytes, totalBytes int64, err error)
	// Warm reads every file under dir once.
	Warm(dir string) error
}

// Progress receives a sweep's progress.
type Progress interface {
	PointStart(index int, total string, label string)
	PointUpdate(label string, iterations int, est Estimate, elapsed time.Duration)
	PointDone(label string, cell sensitivity.Cell, elapsed time.Duration)
	Note(msg string)
}

// Defaults for Config's measurement fields.
const (
	DefaultWarmup        = 5
	DefaultMinIterations = 30
	DefaultTargetRelCI   = 0.02
	DefaultMaxIterations = 400
	DefaultPointTimeout  = 5 * time.Minute
	DefaultPoll          = 100 * time.Millisecond
)

func (c *Config) withDefaults() {
	if c.GPUs == 0 {
		c.GPUs = 1
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = DefaultWarmup
	case c.Warmup < 0: // asked for none
		c.Warmup = 0
	}
	if c.MinIterations == 0 {
		c.MinIterations = DefaultMinIterations
	}
	if c.TargetRelCI == 0 {
		c.TargetRelCI = DefaultTargetRelCI
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.PointTimeout == 0 {
		c.PointTimeout = DefaultPointTimeout
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Strategy == "" {
		c.Strategy = StrategyOptimistic
	}
	if c.Budget == 0 {
		c.Budget = DefaultBudget
		if c.TimeBudget > 0 { // the time bounds the sweep, not a count
			c.Budget = NoPointCap
		}
	}
	if c.JobName == "" && len(c.Command) > 0 {
		c.JobName = JobNameFor(c.Command)
	}
}

// Validate checks the configuration; errors name the setting.
func (c *Config) Validate() error {
	switch {
	case len(c.Command) == 0:
		return errors.New("no training script given (synergy profile [flags] -- SCRIPT [ARGS...])")
	case c.Batch <= 0:
		return fmt.Errorf("batch: %d is not a positive batch size", c.Batch)
	case c.GPUs < 0:
		return fmt.Errorf("gpus: %d is negative", c.GPUs)
	case c.MaxIterations < c.MinIterations:
		return fmt.Errorf("max-iterations: %d is below the minimum of %d measured iterations", c.MaxIterations, c.MinIterations)
	case len(c.CPUs) == 0:
		return errors.New("cpus: the CPU axis is empty")
	case c.Out == "":
		return errors.New("out: no profile path given")
	case c.Budget < 2:
		return fmt.Errorf("budget: %d points cannot cover both ends of an axis", c.Budget)
	case c.MemScale < 0 || c.MemScale > 1 || math.IsNaN(c.MemScale):
		return fmt.Errorf("mem-scale: %v is not a fraction in (0,1]", c.MemScale)
	case c.TimeBudget < 0:
		return fmt.Errorf("time-budget: %s is negative", c.TimeBudget)
	case c.ValidateCells < 0:
		return fmt.Errorf("validate: %d is negative", c.ValidateCells)
	case c.TargetRelCI <= 0 || c.TargetRelCI >= 1:
		return fmt.Errorf("target CI: %v is not a fraction in (0,1)", c.TargetRelCI)
	}
	if _, err := plannerFor(c.Strategy); err != nil {
		return err
	}
	if err := c.validateJob(); err != nil {
		return err
	}
	if why := safefile.TextProblem(c.JobName, safefile.MaxNameBytes); why != "" {
		return fmt.Errorf("job-name: %q %s (a name taken from the script's: give one with --job-name)", safefile.Clip(c.JobName, 64), why)
	}
	for i, v := range c.CPUs {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("cpus: value %d (%v) is not a positive number", i+1, v)
		}
		if v < sensitivity.MinCPUs || v > sensitivity.MaxCPUs {
			return fmt.Errorf("cpus: value %d (%v) is not between %g, the least a CFS quota can enforce, and %d, more than Linux supports",
				i+1, v, sensitivity.MinCPUs, sensitivity.MaxCPUs)
		}
	}
	for i, m := range c.MemLimits {
		if m <= 0 {
			return fmt.Errorf("mem-limits: value %d (%d) is not a positive size", i+1, m)
		}
	}
	return nil
}

// CPUAxis returns the sweep's CPU counts for "--cpu=MAX": powers of two
// below MAX, then MAX itself (1, 2, 4, 8, 12 for 12).
func CPUAxis(max float64) []float64 {
	var out []float64
	for c := 1.0; c < max; c *= 2 {
		out = append(out, c)
	}
	return append(out, max)
}

// MemAxis returns memory limits for "--memory=MAX": MAX/8, MAX/4, MAX/2
// and MAX, rounded down to whole MiB.
func MemAxis(max int64) []int64 {
	var out []int64
	for _, d := range []int64{8, 4, 2, 1} {
		v := max / d / (1 << 20) * (1 << 20)
		if v > 0 && (len(out) == 0 || v > out[len(out)-1]) {
			out = append(out, v)
		}
	}
	return out
}

// DefaultMemAxis picks memory limits around a dataset of datasetBytes plus
// an allowance of workingSetBytes for the job's own memory: a quarter, half
// and 1.25× of the dataset.
func DefaultMemAxis(datasetBytes, workingSetBytes int64) []int64 {
	var out []int64
	for _, f := range []float64{0.25, 0.5, 1.25} {
		v := int64(f*float64(datasetBytes)) + workingSetBytes
		v = v / (1 << 20) * (1 << 20)
		if v > 0 && (len(out) == 0 || v > out[len(out)-1]) {
			out = append(out, v)
		}
	}
	return out
}

func sortedUniqueFloats(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func sortedUniqueInts(xs []int64) []int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Workers is the data-loader worker count for a point: max(1, ceil(cpus/gpus)).
func Workers(cpus float64, gpus int) int {
	if gpus < 1 {
		gpus = 1
	}
	return max(1, int(math.Ceil(cpus/float64(gpus))))
}
