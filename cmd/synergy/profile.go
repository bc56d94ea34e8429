package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/profiler"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/hostlock"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Flag names of `synergy profile`.
const (
	flagRunner        = "runner"
	flagCPUs          = "cpus"
	flagCPUMax        = "cpu"
	flagMemLimits     = "mem-limits"
	flagMemoryMax     = "memory"
	flagBatch         = "batch"
	flagGPUs          = "num-gpus"
	flagMaxIterations = "max-iterations"
	flagData          = "data"
	flagJobName       = "job-name"
	flagOut           = "out"
	flagResume        = "resume"
	flagReadBPS       = "disk-read-bps"
	flagPointTimeout  = "point-timeout"
	flagTargetCI      = "target-ci"
	flagMinIterations = "min-iterations"
	flagWarmup        = "warmup"
	flagLogDir        = "log-dir"
	flagRequireGPU    = "require-gpu"
	flagJSON          = "json"
	flagDockerImg     = "docker-img"
	flagContainerMnt  = "container-mnt"
	flagShmSize       = "shm-size"
	flagStrategy      = "strategy"
	flagStall         = "stall-breakdown"
	flagTimeline      = "timeline"
	flagSampleEvery   = "sample-interval"
	flagBudget        = "budget"
	flagValidate      = "validate"
	flagHostWait      = "host-wait"
)

func profileCommand() *cli.Command {
	return withJobFlags(&cli.Command{
		Name:      "profile",
		Usage:     "measure a training job's throughput over CPU cores and memory limits",
		ArgsUsage: "-- SCRIPT [ARGS...]",
		Description: `Runs SCRIPT once per point under real cgroup limits. Points with memory unlimited
run with the dataset warm in page cache; points with a memory limit start with the
dataset evicted from page cache and are measured after the job's first pass over
it. --strategy chooses the points of the CPU × memory grid to measure; the rest are
predicted by a fitted model. Each point runs until the 95% confidence half-width of
samples/s is within --target-ci of the mean (or a cap on iterations and time). The
profile is saved after every point; Ctrl-C leaves a valid partial profile that
--resume finishes. Cells not measured are predicted (marked measured: false).

SCRIPT must follow the job contract (docs/job-contract.md): the profiler appends
--batch, --workers, --max-iterations and --data, and reads per-iteration metrics
from the file named by $SYNERGY_METRICS_FILE.

Example:
  synergy profile --cpus 1,2 --mem-limits 64MiB,128MiB --data demo/data \
      --disk-read-bps 40MB --out demo/profile.json -- bin/synthtrain --preset audio`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: flagRunner, Value: "local", Usage: "`NAME` of the runner the points run on: local (a cgroup on this host) or docker"},
			&cli.StringFlag{Name: flagCPUs, DefaultText: "the --cpu sweep", Usage: "CPU axis: `LIST` of core counts, e.g. 1,2,4 (fractions down to 0.01: 0.5 is a CFS quota on one pinned core)"},
			&cli.FloatFlag{Name: flagCPUMax, DefaultText: "all online cores", Usage: "sweep 1, 2, 4, ... up to `MAX` cores"},
			&cli.StringFlag{Name: flagMemLimits, DefaultText: "the --memory sweep", Usage: "memory axis: `SIZES`, e.g. 256MiB,1GiB, each at least 8MiB and below the host's memory (page cache is charged); unlimited is always measured"},
			&cli.StringFlag{Name: flagMemoryMax, DefaultText: "1/4, 1/2 and 5/4 of the size of --data, each + 64MiB for the job (512MiB for a Python interpreter)", Usage: "sweep MAX/8, MAX/4, MAX/2 and `MAX`, e.g. 8GiB"},
			&cli.StringFlag{Name: flagStrategy, Value: profiler.StrategyOptimistic, Usage: "`NAME` of the strategy choosing the points to measure: optimistic (ends and knees of each axis, then where the fit is least sure, at most --budget points), axes (the whole CPU axis, then the whole memory axis at the best CPU count), grid (every cell), synergy (Synergy's CPU rule; memory predicted)"},
			&cli.IntFlag{Name: flagBudget, Value: profiler.DefaultBudget, Usage: "optimistic strategy: measure at most `N` points (at least 2); with --time-budget and no --budget, no count: the time bounds it"},
			&cli.IntFlag{Name: flagValidate, DefaultText: "none", Usage: "measure `K` extra cells not used by the fit and report the fit's error on them"},
			&cli.BoolFlag{Name: flagStall, Value: true, DefaultText: "on; --stall-breakdown=false skips it", Usage: "measure the job's step alone once (the running job replays one batch over its control channel, or, for a job that cannot, a launch with --synthetic-data), to split each point's data stall into preprocessing and fetch (DS-Analyzer's method)"},
			&cli.BoolFlag{Name: flagTimeline, Value: true, DefaultText: "on; --timeline=false keeps none", Usage: "keep each point's samples and metrics stream as JSON lines in OUT's name + .timeline/"},
			&cli.DurationFlag{Name: flagSampleEvery, Value: 100 * time.Millisecond, Usage: "sample GPU, host and cgroup counters every `DURATION` during a point (at least 10ms)"},
			&cli.IntFlag{Name: flagBatch, Aliases: []string{"b"}, Value: 32, Usage: "per-GPU batch size `N` passed to the script"},
			&cli.IntFlag{Name: flagGPUs, Value: 1, Usage: "the job trains on `N` GPUs (workers per point = ceil(cpus / gpus))"},
			&cli.IntFlag{Name: flagMaxIterations, Value: profiler.DefaultMaxIterations, Usage: "measure at most `N` iterations per point (a point under a memory limit: rounded up to whole passes over its data, from its second)"},
			&cli.StringFlag{Name: flagData, Usage: "dataset `DIR` (evicted from page cache before memory points)"},
			&cli.StringFlag{Name: flagJobName, DefaultText: "the script's name", Usage: "`NAME` of the job in the profile"},
			&cli.StringFlag{Name: flagOut, Value: "profile.json", Usage: "write the profile JSON to `FILE` (saved after every point)"},
			&cli.BoolFlag{Name: flagResume, Usage: "continue the profile at --out, skipping points already measured"},
			&cli.StringFlag{Name: flagReadBPS, Usage: "throttle reads from the dataset's disk to `RATE` per second (at least 1MiB), e.g. 50MB, to stand for remote storage"},
			&cli.DurationFlag{Name: flagPointTimeout, Value: profiler.DefaultPointTimeout, Usage: "stop a point after `DURATION` of wall time (at least 10s)"},
			&cli.FloatFlag{Name: flagTargetCI, Value: 100 * profiler.DefaultTargetRelCI, Usage: "stop a point when the 95% CI half-width is within `PCT` % of the mean"},
			&cli.IntFlag{Name: flagMinIterations, Value: profiler.DefaultMinIterations, Usage: "measure at least `N` iterations before a point may stop (at least 10)"},
			&cli.IntFlag{Name: flagWarmup, Value: profiler.DefaultWarmup, Usage: "drop the first `N` iterations of each point"},
			&cli.DurationFlag{Name: flagHostWait, Sources: cli.EnvVars("SYNERGY_HOST_WAIT"), Value: hostlock.DefaultMaxWait, Usage: "wait at most `DURATION` for the cores or the dataset another process on this host holds, then fail naming it (0: no bound)"},
			&cli.StringFlag{Name: flagLogDir, DefaultText: "OUT's name + .logs", Usage: "write each point's stdout/stderr into `DIR`"},
			&cli.BoolFlag{Name: flagRequireGPU, Usage: "fail if no GPU can be sampled through NVML"},
			&cli.BoolFlag{Name: flagJSON, Usage: "print the profile JSON on stdout instead of the table"},
			&cli.StringFlag{Name: flagDockerImg, Usage: "docker runner: `IMAGE` holding the script (never pulled)"},
			&cli.StringFlag{Name: flagContainerMnt, Value: "/datadrive", Usage: "docker runner: mount the dataset read-only at `PATH`"},
			&cli.StringFlag{Name: flagShmSize, DefaultText: "1GiB, at most half the memory limit", Usage: "docker runner: /dev/shm `SIZE` for loader workers"},
		}, append(costFlags(), cgroupFlags()...)...),
		Action: runProfile,
	})
}

// profileOptions is everything `synergy profile` was asked, checked.
type profileOptions struct {
	cfg        profiler.Config
	deps       profiler.Deps // the runner, samplers, page cache and host: filled once the host is probed
	runnerName string
	requireGPU bool
	json       bool
	dockerImg  string
	mount      string
	shmBytes   int64
	// hostWait bounds each wait for another run's cores or dataset (0: none).
	hostWait time.Duration
	// cpuFlag and memFlag name the flag each axis came from ("" when the
	// host or the dataset sets it), for errors about the axis.
	cpuFlag, memFlag string
	cgroup           cgroupOptions
}

// parseProfileFlags turns flags into options, group by group (in this
// order, so that the first bad flag is the one reported); every error
// names its flag.
func parseProfileFlags(c *cli.Command) (profileOptions, error) {
	var o profileOptions
	o.cfg.Command = c.Args().Slice()
	if len(o.cfg.Command) == 0 {
		return o, errors.New("no training script: synergy profile [flags] -- SCRIPT [ARGS...]")
	}
	for _, parse := range []func(*cli.Command, *profileOptions) error{
		parseRunnerFlag, parseAxisFlags, parseMeasureFlags, parseDataFlags, parseStrategyFlags, parseOutputFlags, parseDockerFlags, parseJobFlags,
		parseCostFlags, parseCgroupFlags, checkOutputPlace,
	} {
		if err := parse(c, &o); err != nil {
			return o, err
		}
	}
	o.deps.ToolVersion = version
	return o, nil
}

func parseRunnerFlag(c *cli.Command, o *profileOptions) error {
	o.runnerName = c.String(flagRunner)
	switch o.runnerName {
	case "local", "docker":
		return nil
	}
	return fmt.Errorf("--%s: %q is not a runner (local, docker)", flagRunner, o.runnerName)
}

// parseAxisFlags reads the CPU axis (--cpus or --cpu) and the memory axis
// (--mem-limits or --memory); an axis left empty is filled from the host
// and the dataset once they are known.
func parseAxisFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	if c.IsSet(flagCPUs) && c.IsSet(flagCPUMax) {
		return fmt.Errorf("--%s and --%s: give one or the other", flagCPUs, flagCPUMax)
	}
	if c.IsSet(flagMemLimits) && c.IsSet(flagMemoryMax) {
		return fmt.Errorf("--%s and --%s: give one or the other", flagMemLimits, flagMemoryMax)
	}
	var err error
	switch {
	case c.IsSet(flagCPUs):
		if cfg.CPUs, err = parseFloatList(c.String(flagCPUs)); err != nil {
			return fmt.Errorf("--%s: %w", flagCPUs, err)
		}
		o.cpuFlag = flagCPUs
	case c.IsSet(flagCPUMax):
		m := c.Float(flagCPUMax)
		if !(m > 0) || math.IsInf(m, 0) {
			return fmt.Errorf("--%s: %v is not a positive number of cores", flagCPUMax, m)
		}
		cfg.CPUs = profiler.CPUAxis(m)
		o.cpuFlag = flagCPUMax
	}
	for _, v := range cfg.CPUs {
		if v < sensitivity.MinCPUs {
			return fmt.Errorf("--%s: %g CPU is below %g, the least a CFS quota can enforce (the kernel's minimum quota is 1 ms per %d ms period)",
				o.cpuFlag, v, sensitivity.MinCPUs, runner.DefaultCFSPeriodUS/1000)
		}
	}
	switch {
	case c.IsSet(flagMemLimits):
		if cfg.MemLimits, err = parseMemLimits(c.String(flagMemLimits)); err != nil {
			return fmt.Errorf("--%s: %w", flagMemLimits, err)
		}
		o.memFlag = flagMemLimits
	case c.IsSet(flagMemoryMax):
		b, err := units.ParseBytes(c.String(flagMemoryMax))
		if err != nil {
			return fmt.Errorf("--%s: %w", flagMemoryMax, err)
		}
		if cfg.MemLimits = profiler.MemAxis(b); len(cfg.MemLimits) == 0 {
			return fmt.Errorf("--%s: %s is too small to sweep", flagMemoryMax, c.String(flagMemoryMax))
		}
		if low := cfg.MemLimits[0]; low < minMemLimitBytes {
			return fmt.Errorf("--%s: %s sweeps down to %s (MAX/8), below %s: %s; give at least %s",
				flagMemoryMax, c.String(flagMemoryMax), units.FormatBytes(low), units.FormatBytes(minMemLimitBytes), whyMinMem, units.FormatBytes(8*minMemLimitBytes))
		}
		o.memFlag = flagMemoryMax
	}
	return nil
}

// minMemLimitBytes is the smallest memory limit a point may run under, and
// whyMinMem says why: measured under cgroup v1, the bundled static
// synthtrain (one loader worker, batch 8) is OOM-killed before its first
// iteration at 4 MiB and peaks at 6.0-7.1 MiB with its page cache; a
// Python job needs tens of MiB more.
const (
	minMemLimitBytes = 8 << 20
	whyMinMem        = "no job starts in less (the bundled static synthtrain is OOM-killed at 4MiB and peaks at 7MiB; Docker refuses limits below 6MB)"
)

// parseMemLimits reads a list of sizes, each at least minMemLimitBytes.
func parseMemLimits(s string) ([]int64, error) {
	var out []int64
	for _, f := range splitList(s) {
		b, err := units.ParseBytes(f)
		if err != nil {
			return nil, err
		}
		if b < minMemLimitBytes {
			return nil, fmt.Errorf("%s is below %s: %s", f, units.FormatBytes(minMemLimitBytes), whyMinMem)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, errors.New("no sizes given")
	}
	return out, nil
}

// parseMeasureFlags reads how each point is run and when it stops.
func parseMeasureFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	if cfg.Batch = int(c.Int(flagBatch)); cfg.Batch <= 0 {
		return fmt.Errorf("--%s: %d is not a positive batch size", flagBatch, cfg.Batch)
	}
	if cfg.Batch > sensitivity.MaxBatch {
		return fmt.Errorf("--%s: %d is above %d, larger than any per-GPU batch", flagBatch, cfg.Batch, sensitivity.MaxBatch)
	}
	if cfg.GPUs = int(c.Int(flagGPUs)); cfg.GPUs <= 0 {
		return fmt.Errorf("--%s: %d is not a positive GPU count", flagGPUs, cfg.GPUs)
	}
	if cfg.GPUs > sensitivity.MaxGPUs {
		return fmt.Errorf("--%s: %d is above %d, more GPUs than any job synergy profiles on one host", flagGPUs, cfg.GPUs, sensitivity.MaxGPUs)
	}
	if cfg.MaxIterations = int(c.Int(flagMaxIterations)); cfg.MaxIterations <= 0 {
		return fmt.Errorf("--%s: %d is not a positive count", flagMaxIterations, cfg.MaxIterations)
	}
	if cfg.MaxIterations > sensitivity.MaxIterationCap {
		return fmt.Errorf("--%s: %d is above %d", flagMaxIterations, cfg.MaxIterations, sensitivity.MaxIterationCap)
	}
	if cfg.MinIterations = int(c.Int(flagMinIterations)); cfg.MinIterations < 10 {
		return fmt.Errorf("--%s: %d is below 10, too few for a confidence interval", flagMinIterations, cfg.MinIterations)
	}
	if cfg.MaxIterations < cfg.MinIterations {
		return fmt.Errorf("--%s: %d is below --%s (%d)", flagMaxIterations, cfg.MaxIterations, flagMinIterations, cfg.MinIterations)
	}
	if cfg.Warmup = int(c.Int(flagWarmup)); cfg.Warmup < 0 {
		return fmt.Errorf("--%s: %d is negative", flagWarmup, cfg.Warmup)
	}
	if cfg.Warmup > sensitivity.MaxIterationCap {
		return fmt.Errorf("--%s: %d is above %d, more iterations than any point runs", flagWarmup, cfg.Warmup, sensitivity.MaxIterationCap)
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // keep "no warm-up" distinct from "default"
	}
	ci := c.Float(flagTargetCI)
	if !(ci > 0 && ci < 100) {
		return fmt.Errorf("--%s: %v is not a percentage in (0, 100)", flagTargetCI, ci)
	}
	cfg.TargetRelCI = ci / 100
	if cfg.PointTimeout = c.Duration(flagPointTimeout); cfg.PointTimeout <= 0 {
		return fmt.Errorf("--%s: %v is not a positive duration", flagPointTimeout, cfg.PointTimeout)
	}
	if o.hostWait = c.Duration(flagHostWait); o.hostWait < 0 {
		return fmt.Errorf("--%s: %v is negative", flagHostWait, o.hostWait)
	}
	if cfg.PointTimeout < minPointTimeout {
		return fmt.Errorf("--%s: %v is below %v: a point starts the job (seconds for a container or an interpreter importing its framework), drops --%s iterations and measures at least --%s (%d) more, so every point would time out",
			flagPointTimeout, cfg.PointTimeout, minPointTimeout, flagWarmup, flagMinIterations, cfg.MinIterations)
	}
	return nil
}

// minPointTimeout is the shortest --point-timeout: below it no real job can
// start, warm up and run --min-iterations measured iterations.
const minPointTimeout = 10 * time.Second

// parseDataFlags reads the dataset directory and the read throttle on its
// disk.
func parseDataFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	if d := c.String(flagData); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("--%s: %w", flagData, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("--%s: %w", flagData, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("--%s: %s is not a directory", flagData, d)
		}
		cfg.DataDir = abs
	}
	s := c.String(flagReadBPS)
	if s == "" {
		return nil
	}
	var err error
	if cfg.ReadBPS, err = units.ParseBytes(strings.TrimSuffix(strings.TrimSuffix(s, "/s"), "ps")); err != nil {
		return fmt.Errorf("--%s: %w", flagReadBPS, err)
	}
	if cfg.ReadBPS < 1<<20 {
		return fmt.Errorf("--%s: %s is below 1MiB/s", flagReadBPS, s)
	}
	if cfg.DataDir == "" {
		return fmt.Errorf("--%s needs --%s (the limit applies to the dataset's disk)", flagReadBPS, flagData)
	}
	return nil
}

// parseStrategyFlags reads which points to measure.
func parseStrategyFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	cfg.Strategy = c.String(flagStrategy)
	if !slices.Contains(profiler.Strategies(), cfg.Strategy) {
		return fmt.Errorf("--%s: %q is not one of %s", flagStrategy, cfg.Strategy, strings.Join(profiler.Strategies(), ", "))
	}
	if cfg.Budget = int(c.Int(flagBudget)); !c.IsSet(flagBudget) && c.IsSet(flagTimeBudget) {
		cfg.Budget = 0 // the time budget bounds the optimistic strategy, not a count
	} else if cfg.Budget < 2 {
		return fmt.Errorf("--%s: %d points cannot cover both ends of an axis", flagBudget, cfg.Budget)
	}
	if cfg.ValidateCells = int(c.Int(flagValidate)); cfg.ValidateCells < 0 {
		return fmt.Errorf("--%s: %d is negative", flagValidate, cfg.ValidateCells)
	}
	return nil
}

// parseOutputFlags reads what the sweep writes and keeps: the profile, the
// timelines and the logs beside it, and what is printed.
func parseOutputFlags(c *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	cfg.JobName = c.String(flagJobName)
	cfg.Out = c.String(flagOut)
	if cfg.Out == "" {
		return fmt.Errorf("--%s: empty path", flagOut)
	}
	// The profile records both (the name, and timelines under OUT's name);
	// its reader refuses control characters in them.
	for _, f := range []struct{ name, v string }{{flagJobName, cfg.JobName}, {flagOut, cfg.Out}} {
		if strings.IndexFunc(f.v, unicode.IsControl) >= 0 {
			return fmt.Errorf("--%s: %q holds a control character", f.name, f.v)
		}
	}
	if why := safefile.TextProblem(cfg.JobName, safefile.MaxNameBytes); why != "" {
		return fmt.Errorf("--%s: %q %s", flagJobName, safefile.Clip(cfg.JobName, 64), why)
	}
	stem := strings.TrimSuffix(cfg.Out, filepath.Ext(cfg.Out))
	cfg.Resume = c.Bool(flagResume)
	cfg.StallBreakdown = c.Bool(flagStall)
	if c.Bool(flagTimeline) {
		cfg.TimelineDir = stem + ".timeline"
	}
	if cfg.SampleInterval = c.Duration(flagSampleEvery); cfg.SampleInterval < 10*time.Millisecond {
		return fmt.Errorf("--%s: %v is below 10ms", flagSampleEvery, cfg.SampleInterval)
	}
	if cfg.LogDir = c.String(flagLogDir); cfg.LogDir == "" {
		cfg.LogDir = stem + ".logs"
	}
	o.requireGPU = c.Bool(flagRequireGPU)
	o.json = c.Bool(flagJSON)
	return nil
}

// checkOutputPlace checks where the profile and its logs and timelines
// go, before anything is locked or made there: --out's directory exists,
// --out is a regular file when it exists (a directory or a device is not
// "a profile that exists there"), and neither it nor the log and timeline
// directories are inside --data, after symlinks are resolved: the
// profiler's own files would change the dataset under the job, and its
// fingerprint, so that --resume could never match it.
func checkOutputPlace(_ *cli.Command, o *profileOptions) error {
	cfg := &o.cfg
	dir := filepath.Dir(cfg.Out)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--%s %s: the directory %s does not exist", flagOut, cfg.Out, dir)
	}
	if st, err := os.Stat(cfg.Out); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("--%s %s: it is %s, not a profile file", flagOut, cfg.Out, safefile.Kind(st.Mode()))
	}
	if cfg.DataDir == "" {
		return nil
	}
	data, err := filepath.EvalSymlinks(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagData, err)
	}
	for _, p := range []struct{ flag, path string }{{flagOut, cfg.Out}, {flagLogDir, cfg.LogDir}, {flagTimeline, cfg.TimelineDir}} {
		if p.path != "" && inside(resolvedPath(p.path), data) {
			return fmt.Errorf("--%s %s is inside --%s %s: the profiler's own files would change the dataset (and its fingerprint, so --%s could never continue the profile); write them elsewhere",
				p.flag, p.path, flagData, cfg.DataDir, flagResume)
		}
	}
	return nil
}

// resolvedPath is p absolute with symlinks resolved as far as p exists.
func resolvedPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	rest := ""
	for d := abs; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(d) == d {
			return abs
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// inside reports whether path p is dir or below it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// parseDockerFlags reads the docker runner's settings, refused with the
// local runner.
func parseDockerFlags(c *cli.Command, o *profileOptions) error {
	o.dockerImg = c.String(flagDockerImg)
	o.cfg.Image = o.dockerImg // recorded in the profile's identity
	o.mount = c.String(flagContainerMnt)
	if o.runnerName == "docker" && o.dockerImg == "" {
		return fmt.Errorf("--%s: needed with --%s=docker", flagDockerImg, flagRunner)
	}
	if o.runnerName != "docker" && c.IsSet(flagDockerImg) {
		return fmt.Errorf("--%s: only with --%s=docker", flagDockerImg, flagRunner)
	}
	if s := c.String(flagShmSize); s != "" {
		var err error
		if o.shmBytes, err = units.ParseBytes(s); err != nil {
			return fmt.Errorf("--%s: %w", flagShmSize, err)
		}
	}
	return nil
}

func runProfile(ctx context.Context, c *cli.Command) error {
	o, err := parseProfileFlags(c)
	if err != nil {
		return err
	}
	cfg := &o.cfg
	h, err := describeHost(cfg.DataDir)
	if err != nil {
		return err
	}
	// Every point is checked against this host before anything is probed
	// or run.
	if err := resolveAxes(&o, h, runtime.NumCPU()); err != nil {
		return err
	}
	guard, err := guardRun(ctx, c.Root().ErrWriter, o.runnerName, o.hostWait, cfg)
	if err != nil {
		return err
	}
	defer guard.release()
	env, err := probeEnvironment(ctx, o, h)
	if err != nil {
		return err
	}
	defer env.close()
	deps := &o.deps
	withEnvironment(deps, env)
	stdout, stderr := c.Root().Writer, c.Root().ErrWriter
	if err := guard.share(ctx, cfg, deps, o.hostWait, stderr); err != nil {
		return err
	}
	for _, w := range env.warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	deps.Progress = newTextProgress(stderr, isTerminal(stderr), *cfg)
	fmt.Fprintf(stderr, "profiling %s on the %s runner: a %d CPU × %d memory grid (+ unlimited), strategy %s (gpu: %s)\n",
		strings.Join(cfg.Command, " "), o.runnerName, len(cfg.CPUs), len(cfg.MemLimits), cfg.Strategy, deps.GPU.Mode)

	p, err := profiler.Run(ctx, *cfg, *deps)
	if err != nil {
		if errors.Is(err, profiler.ErrInterrupted) {
			return fmt.Errorf("%w (%s): run again with --%s to finish it", err, cfg.Out, flagResume)
		}
		if errors.Is(err, profiler.ErrProfileExists) {
			return fmt.Errorf("--%s: %w (--%s continues it)", flagOut, err, flagResume)
		}
		return err
	}
	fmt.Fprintf(stderr, "profile saved to %s (%d points, %.0f s)\n", cfg.Out, p.Cost.Points, p.Cost.WallSeconds)
	if o.json {
		err = p.Encode(stdout)
	} else {
		err = printMatrix(stdout, p)
	}
	if err == nil && len(p.MeasuredOK()) == 0 {
		return fmt.Errorf("no point produced a measurement: every one failed (their failures are recorded in %s; the logs are in %s)", cfg.Out, cfg.LogDir)
	}
	return err
}

// withEnvironment completes deps with what the host gave: the runner,
// samplers and page cache, and the host and GPU descriptions.
func withEnvironment(deps *profiler.Deps, env *environment) {
	deps.Runner = env.runner
	deps.Samplers = env.samplers
	deps.Cache = env.cache
	deps.Host = env.host
	deps.GPU = env.gpu
}

// resolveAxes fills the axes the flags left empty (the CPU sweep up to the
// online CPUs, the memory axis around the dataset) and checks every point
// against what this host can run: a point pins ceil(cpus) of the online
// CPUs (online <= 0: unknown), and a memory limit must be below the
// host's DRAM to limit anything. Errors name the flag the axis came from.
func resolveAxes(o *profileOptions, h sensitivity.HostInfo, online int) error {
	cfg := &o.cfg
	if online <= 0 || (h.LogicalCPUs > 0 && h.LogicalCPUs < online) {
		online = h.LogicalCPUs
	}
	if len(cfg.CPUs) == 0 && online > 0 {
		cfg.CPUs = profiler.CPUAxis(float64(online))
	}
	if err := profiler.CPUsWithinHost(cfg.CPUs, online); err != nil {
		return fmt.Errorf("--%s: %w", o.cpuFlag, err)
	}
	if len(cfg.MemLimits) == 0 && cfg.DataDir != "" {
		var err error
		if cfg.MemLimits, err = profiler.DefaultMemLimitsFor(cfg.DataDir, cfg.Command); err != nil {
			return fmt.Errorf("--%s: %w", flagData, err)
		}
		cfg.MemAxisFromJob = true
	}
	for _, m := range cfg.MemLimits {
		if h.DRAMBytes <= 0 || m < h.DRAMBytes {
			continue
		}
		if o.memFlag == "" {
			return fmt.Errorf("--%s: the memory axis drawn from the dataset's size reaches %s, not below this host's %s of memory; give --%s",
				flagData, units.FormatBytes(m), units.FormatBytes(h.DRAMBytes), flagMemLimits)
		}
		return fmt.Errorf("--%s: %s is not below this host's %s of memory: a limit at or above it limits nothing (unlimited is always measured)",
			o.memFlag, units.FormatBytes(m), units.FormatBytes(h.DRAMBytes))
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseFloatList(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a positive number of cores", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("no values given")
	}
	return out, nil
}

// isTerminal reports whether w is a terminal (progress lines are then
// rewritten in place).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// textProgress prints one line per point on stderr: on a terminal the line
// is rewritten in place while the point runs; otherwise a line every 5 s.
type textProgress struct {
	w        io.Writer
	tty      bool
	idx      int
	n        string
	lastLine time.Time
	// What ends a point, for the bar: the CI target, the iteration cap
	// and the time cap.
	targetRelCI float64
	maxIters    int
	timeout     time.Duration
}

func newTextProgress(w io.Writer, tty bool, cfg profiler.Config) *textProgress {
	return &textProgress{w: w, tty: tty, targetRelCI: cfg.TargetRelCI, maxIters: cfg.MaxIterations, timeout: cfg.PointTimeout}
}

// done estimates how far a point is towards stopping, in [0, 1]: the
// nearest of its three ends. The interval shrinks as 1/sqrt(n), so the
// share of iterations done towards the CI target is (target / current)².
func (t *textProgress) done(iters int, est profiler.Estimate, elapsed time.Duration) float64 {
	f := 0.0
	if r := est.RelHalfWidth(); r > 0 && !math.IsInf(r, 1) && t.targetRelCI > 0 {
		f = math.Pow(t.targetRelCI/r, 2)
	}
	if t.maxIters > 0 {
		f = math.Max(f, float64(iters)/float64(t.maxIters))
	}
	if t.timeout > 0 {
		f = math.Max(f, elapsed.Seconds()/t.timeout.Seconds())
	}
	return math.Min(f, 1)
}

// bar draws f in [0, 1] as a 20-cell bar.
func bar(f float64) string {
	const width = 20
	n := int(math.Round(f * width))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func (t *textProgress) PointStart(i int, n string, label string) {
	t.idx, t.n = i, n
	t.lastLine = time.Now()
	if t.tty {
		fmt.Fprintf(t.w, "[%d/%s] %s: starting", i, n, label)
	} else {
		fmt.Fprintf(t.w, "[%d/%s] %s: starting\n", i, n, label)
	}
}

func (t *textProgress) PointUpdate(label string, iters int, est profiler.Estimate, elapsed time.Duration) {
	ci := "CI pending"
	if r := est.RelHalfWidth(); !math.IsInf(r, 1) {
		ci = fmt.Sprintf("±%.1f%%", 100*r)
	}
	line := fmt.Sprintf("[%d/%s] %s: %d iterations measured, %.1f samples/s %s, %s",
		t.idx, t.n, label, iters, est.SamplesPerS, ci, elapsed.Truncate(100*time.Millisecond))
	if est.Waiting != "" {
		line = fmt.Sprintf("[%d/%s] %s: %s, %s", t.idx, t.n, label, est.Waiting, elapsed.Truncate(100*time.Millisecond))
	}
	if t.tty {
		fmt.Fprintf(t.w, "\r\033[K%s %s", bar(t.done(iters, est, elapsed)), line)
		return
	}
	if time.Since(t.lastLine) >= 5*time.Second {
		t.lastLine = time.Now()
		fmt.Fprintln(t.w, line)
	}
}

func (t *textProgress) PointDone(label string, cell sensitivity.Cell, elapsed time.Duration) {
	var what string
	switch {
	case cell.Failure != nil:
		what = fmt.Sprintf("FAILED (%s): %s", cell.Failure.Class, cell.Failure.Message)
	default:
		st := cell.Stats
		what = fmt.Sprintf("%.1f samples/s ±%.1f%% within passes over %d iterations (%s), data wait %.0f%%",
			cell.SamplesPerS, 100*cell.SamplesPerSCI95/math.Max(cell.SamplesPerS, 1e-9),
			st.Iterations-st.WarmupIterations, st.StopReason, 100*st.DataWaitFraction)
		if st.PassBoundaries > 0 {
			what += fmt.Sprintf("; %d pass ends crossed, each %.2fs beyond an iteration (evaluation, checkpoints), left out of the rate", st.PassBoundaries, st.EpochOverheadS)
		}
		if st.MetricsSource == sensitivity.MetricsLog {
			what += ", from the job's log lines (--progress-regex)"
		}
		if st.WorkersUsed != nil {
			what += fmt.Sprintf("; the job ran %d loader workers and %d threads", *st.WorkersUsed, st.Threads)
		}
		if st.MetricsSource == sensitivity.MetricsWall {
			what = fmt.Sprintf("%.1f samples/s ±? from wall time, start-up included (the job wrote no metrics stream)", cell.SamplesPerS)
		}
	}
	prefix := ""
	if t.tty {
		prefix = "\r\033[K"
	}
	fmt.Fprintf(t.w, "%s[%d/%s] %s: %s in %s\n", prefix, t.idx, t.n, label, what, elapsed.Truncate(100*time.Millisecond))
}

func (t *textProgress) Note(msg string) {
	if t.tty {
		fmt.Fprint(t.w, "\r\033[K")
	}
	fmt.Fprintln(t.w, msg)
}
