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
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/report"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/joint"
	"github.com/synergy-sched/synergy/scheduler/sim"
	"github.com/synergy-sched/synergy/scheduler/simcore"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Flag names of `synergy simulate`.
const (
	simFlagCluster      = "cluster"
	simFlagTrace        = "trace"
	simFlagPhilly       = "philly"
	simFlagPhillyArr    = "philly-arrivals"
	simFlagPhillyDur    = "philly-durations"
	simFlagLoads        = "loads"
	simFlagNumJobs      = "num-jobs"
	simFlagSplit        = "split"
	simFlagMultiGPU     = "multi-gpu"
	simFlagSeed         = "seed"
	simFlagWindow       = "window"
	simFlagStrategies   = "strategies"
	simFlagPolicies     = "policies"
	simFlagRound        = "round"
	simFlagOut          = "out"
	simFlagProfile      = "profile"
	simFlagRecordTrace  = "record-trace"
	simFlagStopWhenIdle = "stop-when-idle"
	simFlagStatic       = "static"
	simFlagWorkers      = "workers"
	simFlagJSON         = "json"
	simFlagPlot         = "plot"
	simFlagPlotAlloc    = "plot-allocation"
	simFlagMaxHours     = "max-hours"
)

// maxSimHours caps --max-hours: a century of simulated time, far past any
// study, low enough that hours × 3600 stays exact.
const maxSimHours = 100 * 365 * 24

// maxSeconds reads --max-hours (0: no limit) in seconds.
func maxSeconds(c *cli.Command) (float64, error) {
	h := c.Float(simFlagMaxHours)
	if !(h >= 0) || h > maxSimHours {
		return 0, badFlag(simFlagMaxHours, fmt.Errorf("%v: need hours from 0 (no limit) to %d", h, maxSimHours))
	}
	return h * 3600, nil
}

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "simulate scheduling strategies and policies on a cluster, over Synergy's generator, a Philly job log or a recorded trace",
		Description: "Rounds of --round (300 s) with Synergy's semantics: every round the policy orders the runnable jobs and the\n" +
			"strategy re-packs them on the empty cluster. Results are over the job ids in --window. A sweep over\n" +
			"--strategies × --policies × --loads × --seed runs in parallel. Same flags and seed: identical output.\n\n" +
			namedHelp("Strategies", scheduler.StrategyHelp()) + "\n" + namedHelp("Policies", scheduler.PolicyHelp()) + "\n\n" + gavelHelp(),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: simFlagCluster, Value: "default", Usage: "cluster JSON file or preset (" + strings.Join(scheduler.PresetNames(), ", ") + ")"},
			&cli.StringFlag{Name: simFlagTrace, Usage: "Synergy recorded trace CSV (job_id,model,arrival_s,iterations,gpus) instead of the generator"},
			&cli.StringFlag{Name: simFlagPhilly, Usage: "Philly cluster_job_log JSON instead of the generator: jobs in log order (cycling), GPU counts from the log with --multi-gpu, Poisson arrivals at --loads"},
			&cli.BoolFlag{Name: simFlagPhillyArr, Usage: "with --philly: the log's submission times instead of Poisson arrivals (one pass through the log)"},
			&cli.StringFlag{Name: simFlagPhillyDur, Usage: "with --philly: gavel (re-drawn as the generator does; Synergy's default) or log (the log's; Synergy's --no_exp); default gavel with Poisson arrivals, log with --philly-arrivals"},
			&cli.StringFlag{Name: simFlagLoads, Aliases: []string{"jobs-per-hour"}, Value: "9", Usage: "generator: arrival rates in jobs per hour, e.g. 3,6,9"},
			&cli.IntFlag{Name: simFlagNumJobs, DefaultText: "when the window's jobs have finished", Usage: "generator: stop after `N` jobs (at most 10000000)"},
			&cli.StringFlag{Name: simFlagSplit, Value: "20,70,10", Usage: "generator: percent of image, language, speech jobs"},
			&cli.BoolFlag{Name: simFlagMultiGPU, Usage: "generator: GPU demands 1/2/4/8 (70/10/15/5%) instead of single-GPU jobs; --philly: the log's GPU counts"},
			&cli.StringFlag{Name: simFlagSeed, Value: "1", Usage: "generator seed(s), e.g. 1 or 1,2,3 (one run per seed)"},
			&cli.StringFlag{Name: simFlagWindow, Usage: "job ids to report on, FIRST-LAST or all (default 4000-4999 for the generator and --philly, all for a trace and --philly-arrivals)"},
			&cli.StringFlag{Name: simFlagStrategies, Value: "fair,tune", Usage: "allocation strategies: " + strings.Join(scheduler.StrategyNames(), ", ")},
			&cli.StringFlag{Name: simFlagPolicies, Value: "fifo", Usage: "job-ordering policies: " + strings.Join(scheduler.PolicyNames(), ", ")},
			&cli.DurationFlag{Name: simFlagRound, Value: sim.DefaultRoundSeconds * time.Second, Usage: "round (lease) length"},
			&cli.StringFlag{Name: simFlagOut, Usage: "write the results JSON here"},
			&cli.StringSliceFlag{Name: simFlagProfile, Usage: "profile JSON `FILE` written by synergy profile (repeatable): a model named by its job name for the trace; with the generator, jobs take these models round-robin"},
			&cli.StringFlag{Name: simFlagRecordTrace, Usage: "generator: write the jobs of the (single) run as a trace CSV"},
			&cli.BoolFlag{Name: simFlagStatic, Usage: "with --trace: the original's --static replay, first round at t = 1 s (jobs arriving in the first second run in it) instead of at the round holding the first arrival"},
			&cli.BoolFlag{Name: simFlagStopWhenIdle, Usage: "end a trace replay when no job is runnable at a round boundary, as the original does"},
			&cli.IntFlag{Name: simFlagWorkers, Value: runtime.GOMAXPROCS(0), Usage: "parallel runs"},
			&cli.BoolFlag{Name: simFlagJSON, Usage: "print the results JSON on stdout instead of the table"},
			&cli.StringFlag{Name: simFlagPlot, Usage: "draw the JCT CDF of every run here; format by extension (.png, .svg, .pdf)"},
			&cli.FloatFlag{Name: simFlagMaxHours, Aliases: []string{"gavel-max-hours"}, Usage: "end each run after this much simulated time (`HOURS`; 0: none), for saturated loads that never finish their window (every engine); the result says truncated and its figures are over the jobs that finished"},
			&cli.StringFlag{Name: simFlagPlotAlloc, Usage: "draw each run's allocated GPU, CPU and memory per simulated hour here (untyped runs); with several runs one file each, named by strategy, policy and what varies, e.g. alloc-tune-fifo.png"},
		}, gavelFlags()...),
		Action: runSimulate,
	}
}

// maxSimWorkers caps --workers: parallel runs beyond the cores only queue.
const maxSimWorkers = 1024

// simulateOptions is the command's flags, checked.
type simulateOptions struct {
	cluster     scheduler.Cluster
	catalog     *scheduler.Catalog
	profiles    []string
	trace       []*scheduler.Job
	tracePath   string
	philly      []sim.PhillyJob
	phillySkips sim.PhillySkips
	phillyPath  string
	phillyArr   bool
	phillyGavel bool
	loads       []float64
	numJobs     int
	split       [3]float64
	multiGPU    bool
	seeds       []uint64
	window      simcore.Window
	strategies  []string
	policies    []string
	roundS      float64
	maxS        float64
	out         string
	recordTrace string
	stopIdle    bool
	static      bool
	workers     int
	json        bool
	plot        string
	plotAlloc   string
	warnings    []string
}

// parseSimulateFlags turns flags into options; every error names its flag.
func parseSimulateFlags(ctx context.Context, c *cli.Command) (simulateOptions, error) {
	var o simulateOptions
	workload := func(c *cli.Command) error { return o.parseWorkload(ctx, c) }
	if err := refuseIgnored(c, false); err != nil {
		return o, err
	}
	for _, parse := range []func(*cli.Command) error{workload, o.parseGenerator, o.parseSweep, o.parseOutput} {
		if err := parse(c); err != nil {
			return o, err
		}
	}
	return o, nil
}

// parseWorkload reads the cluster, the profiles and the workload's source
// (a trace, a Philly log, or else the generator); ctx stops a long trace's
// reading.
func (o *simulateOptions) parseWorkload(ctx context.Context, c *cli.Command) error {
	var err error
	if o.cluster, err = scheduler.LoadCluster(c.String(simFlagCluster)); err != nil {
		return badFlag(simFlagCluster, err)
	}
	if err := o.loadProfiles(c.StringSlice(simFlagProfile)); err != nil {
		return badFlag(simFlagProfile, err)
	}
	if c.String(simFlagTrace) != "" && c.String(simFlagPhilly) != "" {
		return badFlag(simFlagPhilly, fmt.Errorf("cannot be used with --%s: give one workload", simFlagTrace))
	}
	if o.tracePath = c.String(simFlagTrace); o.tracePath != "" {
		if o.trace, err = sim.LoadTraceContext(ctx, o.tracePath, o.catalog); err != nil {
			return badFlag(simFlagTrace, err)
		}
	}
	if o.phillyPath = c.String(simFlagPhilly); o.phillyPath != "" {
		if len(o.profiles) > 0 {
			return badFlag(simFlagPhilly, fmt.Errorf("cannot be used with --%s: Philly jobs take zoo models by --%s", simFlagProfile, simFlagSplit))
		}
		if o.philly, o.phillySkips, err = sim.LoadPhilly(o.phillyPath, sim.PhillyOptions{MultiGPU: c.Bool(simFlagMultiGPU)}); err != nil {
			return badFlag(simFlagPhilly, err)
		}
	}
	if o.phillyArr = c.Bool(simFlagPhillyArr); o.phillyArr && o.phillyPath == "" {
		return badFlag(simFlagPhillyArr, fmt.Errorf("needs --%s", simFlagPhilly))
	}
	switch d := c.String(simFlagPhillyDur); {
	case d != "" && o.phillyPath == "":
		return badFlag(simFlagPhillyDur, fmt.Errorf("needs --%s", simFlagPhilly))
	case d == "":
		o.phillyGavel = !o.phillyArr
	case d == "gavel" || d == "log":
		o.phillyGavel = d == "gavel"
	default:
		return badFlag(simFlagPhillyDur, fmt.Errorf("%q is neither gavel nor log", d))
	}
	return nil
}

// loadProfiles adds each profile to the catalog as a model named by its
// job name, keeping the warnings.
func (o *simulateOptions) loadProfiles(paths []string) error {
	o.catalog = scheduler.NewCatalog(scheduler.ShapeOf(&o.cluster))
	for _, path := range paths {
		p, err := sensitivity.LoadFilled(path) // as matrix reads it: holes predicted
		if err != nil {
			return err
		}
		warns, err := o.catalog.AddProfile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, w := range warns {
			o.warnings = append(o.warnings, fmt.Sprintf("profile %s: %s", p.Job.Name, w))
		}
	}
	o.profiles = o.catalog.Profiles()
	return nil
}

// parseGenerator reads the generator's loads, size, split, GPU demands and
// seeds.
func (o *simulateOptions) parseGenerator(c *cli.Command) error {
	var err error
	if o.loads, err = parsePositiveList(c.String(simFlagLoads)); err != nil {
		return badFlag(simFlagLoads, err)
	}
	for _, l := range o.loads {
		if l > sim.MaxJobsPerHour {
			return badFlag(simFlagLoads, fmt.Errorf("%g jobs per hour is above %d, the most one simulation takes", l, sim.MaxJobsPerHour))
		}
	}
	switch o.numJobs = c.Int(simFlagNumJobs); {
	case o.numJobs < 0:
		return badFlag(simFlagNumJobs, fmt.Errorf("%d is negative", o.numJobs))
	case o.numJobs > sim.MaxJobs:
		return badFlag(simFlagNumJobs, fmt.Errorf("%d is above %d, the most jobs one simulation runs", o.numJobs, sim.MaxJobs))
	}
	split, err := parsePositiveList(c.String(simFlagSplit), true)
	if err != nil {
		return badFlag(simFlagSplit, err)
	}
	if len(split) != 3 {
		return badFlag(simFlagSplit, fmt.Errorf("%d values; want image,language,speech percentages", len(split)))
	}
	copy(o.split[:], split)
	o.multiGPU = c.Bool(simFlagMultiGPU)
	for _, s := range splitList(c.String(simFlagSeed)) {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return badFlag(simFlagSeed, fmt.Errorf("%q is not a non-negative integer", s))
		}
		o.seeds = append(o.seeds, v)
	}
	if len(o.seeds) == 0 {
		return badFlag(simFlagSeed, errors.New("no seed given"))
	}
	if o.trace == nil {
		g := sim.GeneratorConfig{JobsPerHour: o.loads[0], NumJobs: o.numJobs, Split: o.split}
		if err := g.Validate(); err != nil {
			return badFlag(simFlagSplit, err)
		}
	}
	return nil
}

// parseSweep reads the window, the strategies and policies, and the round.
func (o *simulateOptions) parseSweep(c *cli.Command) error {
	var err error
	def := simcore.Steady // a generated workload's steady state
	if o.replay() {
		def = simcore.All
	}
	if o.window, err = simcore.ParseWindow(c.String(simFlagWindow), def); err != nil {
		return badFlag(simFlagWindow, err)
	}
	if o.window.IsAll() && !o.replay() && o.numJobs == 0 {
		// An open workload ends when its window's jobs have: this one
		// would run until killed.
		return badFlag(simFlagWindow, fmt.Errorf("all: the generator (or --%s at Poisson arrivals) never stops drawing jobs; give FIRST-LAST or --%s N", simFlagPhilly, simFlagNumJobs))
	}
	if !o.window.IsAll() && o.window.Last >= sim.MaxJobs {
		return badFlag(simFlagWindow, fmt.Errorf("%s reaches job %d: a run takes at most %d jobs", o.window, o.window.Last, sim.MaxJobs))
	}
	if !o.replay() {
		w, err := windowPastJobs(o.window, o.numJobs)
		if err != nil {
			return badFlag(simFlagWindow, err)
		}
		o.warnings = append(o.warnings, w...)
	}
	if o.strategies, err = checkNames(c.String(simFlagStrategies), func(n string) error { _, err := scheduler.NewStrategy(n); return err }); err != nil {
		return badFlag(simFlagStrategies, err)
	}
	if o.policies, err = checkNames(c.String(simFlagPolicies), func(n string) error { _, err := scheduler.NewPolicy(n); return err }); err != nil {
		return badFlag(simFlagPolicies, err)
	}
	switch o.roundS = c.Duration(simFlagRound).Seconds(); {
	case !(o.roundS > 0):
		return badFlag(simFlagRound, fmt.Errorf("%v is not a positive duration", c.Duration(simFlagRound)))
	case o.roundS < sim.MinRoundSeconds || o.roundS > sim.MaxRoundSeconds:
		return badFlag(simFlagRound, fmt.Errorf("%v is outside %v to %v (Synergy's round is 5m)", c.Duration(simFlagRound),
			time.Duration(sim.MinRoundSeconds)*time.Second, time.Duration(sim.MaxRoundSeconds)*time.Second))
	}
	if o.maxS, err = maxSeconds(c); err != nil {
		return err
	}
	if n := len(o.strategies) * len(o.policies) * len(o.loads) * len(o.seeds); n > sim.MaxRuns {
		return badFlag(simFlagSeed, fmt.Errorf("the sweep has %d runs (--%s × --%s × --%s × --%s), above %d, the most one sweep runs",
			n, simFlagStrategies, simFlagPolicies, simFlagLoads, simFlagSeed, sim.MaxRuns))
	}
	return nil
}

// parseOutput reads where results go and how the sweep runs.
func (o *simulateOptions) parseOutput(c *cli.Command) error {
	o.out = c.String(simFlagOut)
	o.recordTrace = c.String(simFlagRecordTrace)
	if o.recordTrace != "" && (o.trace != nil || (!o.phillyArr && (len(o.loads) != 1 || len(o.seeds) != 1))) {
		return badFlag(simFlagRecordTrace, errors.New("needs the generator with a single --loads value and a single --seed (or --philly likewise, or --philly-arrivals)"))
	}
	for _, f := range []struct{ flag, path string }{{simFlagOut, o.out}, {simFlagRecordTrace, o.recordTrace}, {simFlagPlot, c.String(simFlagPlot)}, {simFlagPlotAlloc, c.String(simFlagPlotAlloc)}} {
		if err := checkOutputDir(f.path); err != nil {
			return badFlag(f.flag, err)
		}
	}
	o.stopIdle = c.Bool(simFlagStopWhenIdle)
	if o.static = c.Bool(simFlagStatic); o.static && o.trace == nil {
		return badFlag(simFlagStatic, errors.New("replays a recorded trace: give --trace"))
	}
	if o.workers = c.Int(simFlagWorkers); o.workers < 1 || o.workers > maxSimWorkers {
		return badFlag(simFlagWorkers, fmt.Errorf("%d: need 1 to %d", o.workers, maxSimWorkers))
	}
	o.json = c.Bool(simFlagJSON)
	if o.plot = c.String(simFlagPlot); o.plot != "" {
		if _, err := report.FormatOf(o.plot); err != nil {
			return badFlag(simFlagPlot, err)
		}
	}
	if o.plotAlloc = c.String(simFlagPlotAlloc); o.plotAlloc != "" {
		if _, err := report.FormatOf(o.plotAlloc); err != nil {
			return badFlag(simFlagPlotAlloc, err)
		}
		for _, other := range []struct{ flag, path string }{{simFlagPlot, o.plot}, {simFlagOut, o.out}} {
			if other.path != "" && filepath.Clean(other.path) == filepath.Clean(o.plotAlloc) {
				return badFlag(simFlagPlotAlloc, fmt.Errorf("%s is --%s's file too: give each its own", o.plotAlloc, other.flag))
			}
		}
	}
	return nil
}

// checkOutputDir checks, before any run, that path (when given) can be
// written: its directory exists and is a directory, and path itself is not
// a directory. A results file that cannot be written would otherwise fail
// only after the sweep, and lose it.
func checkOutputDir(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: its directory: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}

// refuseIgnored refuses, before any run, a flag given that the run would
// ignore, naming it and why: typed (Gavel-engine) flags on a Synergy run,
// Synergy's workload flags on a typed run, and generator flags with a
// workload that brings its own jobs (--trace, --gavel-trace).
func refuseIgnored(c *cli.Command, typed bool) error {
	const why = "is ignored by "
	if !typed {
		for _, f := range gavelFlags() {
			if n := f.Names()[0]; c.IsSet(n) {
				return badFlag(n, fmt.Errorf("applies to typed runs (Gavel's engine: a Gavel policy or %s in --%s, or --%s/--%s); this run is Synergy's (--%s %s)",
					joint.Policy, simFlagPolicies, gvFlagTrace, gvFlagGenerate, simFlagPolicies, c.String(simFlagPolicies)))
			}
		}
		if c.IsSet(simFlagTrace) {
			for _, n := range []string{simFlagLoads, simFlagSeed, simFlagMultiGPU, simFlagNumJobs, simFlagSplit} {
				if c.IsSet(n) {
					return badFlag(n, fmt.Errorf(why+"a --%s replay: its jobs, arrivals and GPU counts are the trace's", simFlagTrace))
				}
			}
		}
		return nil
	}
	for _, n := range []string{simFlagSplit, simFlagProfile, simFlagRecordTrace, simFlagStatic, simFlagStopWhenIdle, simFlagPhillyArr, simFlagPhillyDur} {
		if c.IsSet(n) {
			return badFlag(n, fmt.Errorf("applies to Synergy's engine only; this run is typed (Gavel's engine)"))
		}
	}
	if c.IsSet(gvFlagTrace) {
		for _, n := range []string{simFlagLoads, simFlagNumJobs, simFlagMultiGPU, gvFlagPriorities, gvFlagSLOs, gvFlagRecord} {
			if c.IsSet(n) {
				return badFlag(n, fmt.Errorf(why+"a --%s replay: its jobs and arrivals are the trace's", gvFlagTrace))
			}
		}
	}
	return nil
}

// windowPastJobs checks --window against --num-jobs (jobs are numbered
// from 0 by both generators): a window past every job is an error, one
// reaching past the last job a warning (the run ends when the jobs
// generated have, and the figures are over those of the window).
func windowPastJobs(w simcore.Window, numJobs int) ([]string, error) {
	switch {
	case numJobs == 0 || w.IsAll() || w.Last < numJobs:
		return nil, nil
	case w.First >= numJobs:
		return nil, fmt.Errorf("%s: --%s %d generates jobs 0-%d only", w, simFlagNumJobs, numJobs, numJobs-1)
	}
	return []string{fmt.Sprintf("--%s %s reaches past --%s %d: each run ends when its %d jobs have, with figures over jobs %d-%d",
		simFlagWindow, w, simFlagNumJobs, numJobs, numJobs, w.First, numJobs-1)}, nil
}

// parsePositiveList reads a comma-separated list of positive numbers (or
// non-negative ones, with allowZero).
func parsePositiveList(s string, allowZero ...bool) ([]float64, error) {
	fields := splitList(s)
	if len(fields) == 0 {
		return nil, errors.New("no values given")
	}
	zeroOK := len(allowZero) > 0 && allowZero[0]
	out := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || (!(v > 0) && !(zeroOK && v == 0)) {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out[i] = v
	}
	return out, nil
}

func checkNames(s string, check func(string) error) ([]string, error) {
	names := splitList(s)
	if len(names) == 0 {
		return nil, errors.New("no names given")
	}
	for _, n := range names {
		if err := check(n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// replay reports whether the workload brings its own arrivals (a trace, or
// a Philly log at its submission times).
func (o *simulateOptions) replay() bool { return o.trace != nil || o.phillyArr }

// source makes the workload of one point of the sweep: the trace, the
// Philly log, or the generator at the point's load and seed.
func (o *simulateOptions) source(p simcore.Point) (sim.Source, error) {
	if o.trace != nil {
		return &sim.List{Jobs: o.trace, Name: "trace " + o.tracePath}, nil
	}
	if o.philly != nil {
		return sim.NewPhillySource(o.philly, sim.PhillyConfig{JobsPerHour: p.JobsPerHour, NumJobs: o.numJobs, Split: o.split, Seed: p.Seed, GavelDurations: o.phillyGavel})
	}
	return sim.NewCatalogGenerator(sim.GeneratorConfig{
		JobsPerHour: p.JobsPerHour, NumJobs: o.numJobs, Split: o.split, MultiGPU: o.multiGPU, Seed: p.Seed, Models: o.profiles,
	}, o.catalog)
}

// recorder keeps the jobs of the first workload a source makes
// (--record-trace; every run of a single load and seed sees the same jobs
// up to its own end).
type recorder struct {
	jobs  []*scheduler.Job
	taken bool
}

// wrap returns source with its first workload recorded.
func (r *recorder) wrap(source func(simcore.Point) (sim.Source, error)) func(simcore.Point) (sim.Source, error) {
	return func(p simcore.Point) (sim.Source, error) {
		s, err := source(p)
		if err != nil || r.taken {
			return s, err
		}
		r.taken = true
		return recording{Source: s, rec: r}, nil
	}
}

// recording is a source whose jobs go to rec as they are yielded.
type recording struct {
	sim.Source
	rec *recorder
}

func (x recording) Next() (*scheduler.Job, bool) {
	j, ok := x.Source.Next()
	if ok {
		x.rec.jobs = append(x.rec.jobs, j)
	}
	return j, ok
}

func runSimulate(ctx context.Context, c *cli.Command) error {
	typed, err := typedRun(c)
	if err != nil {
		return err
	}
	if typed {
		return runGavelSimulate(ctx, c)
	}
	o, err := parseSimulateFlags(ctx, c)
	if err != nil {
		return err
	}
	stdout, stderr := c.Root().Writer, c.Root().ErrWriter
	for _, w := range o.warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if o.philly != nil {
		fmt.Fprintf(stderr, "philly %s: %d jobs used, %d skipped (%s)\n", o.phillyPath, len(o.philly), o.phillySkips.Total(), o.phillySkips)
	}
	base := sim.Config{
		Cluster: &o.cluster, RoundSeconds: o.roundS, Window: o.window, MaxS: o.maxS,
		FirstRoundAtZero: o.trace == nil, StopWhenIdle: o.stopIdle, Static: o.static,
	}
	source := o.source
	var rec *recorder
	if o.recordTrace != "" {
		rec = &recorder{}
		source = rec.wrap(source)
		o.workers = 1
	}
	points := sim.Grid{Strategies: o.strategies, Policies: o.policies, Loads: o.loads, Seeds: o.seeds, Replay: o.replay()}.Points()
	tty := writesToTerminal(stderr)
	start := time.Now()
	lw := &lockedWriter{w: stderr}
	base.RunProgress = func(p simcore.Point, rounds int, nowS float64) {
		clear := ""
		if tty {
			clear = "\r\x1b[K"
		}
		fmt.Fprintf(lw, "%ssimulate: running %s+%s load %g seed %d: %.1f h simulated, %d rounds (%s)\n", clear, p.Policy, p.Strategy, p.JobsPerHour, p.Seed, nowS/3600, rounds, time.Since(start).Round(time.Second))
	}
	res, err := sim.Sweep(ctx, base, points, o.workers, source, func(done, total int, p simcore.Point) {
		printProgress(lw, tty, done, total, p, time.Since(start))
	})
	if err != nil {
		return stopped(stdout, stderr, tty, len(res.Runs), len(points), func() error { return printSweep(stdout, res) }, err)
	}
	if err := o.save(stderr, res, rec); err != nil {
		return err
	}
	if o.json {
		return res.WriteJSON(stdout)
	}
	return printSweep(stdout, res)
}

// stopped reports a sweep that a failed run, Ctrl-C or SIGTERM stopped,
// for every engine alike (simcore.Sweep's rule): the runs that finished
// are printed (no file is written: a partial sweep is not a result) and
// the error says how far it got.
func stopped(stdout, stderr io.Writer, tty bool, finished, total int, print func() error, err error) error {
	if tty {
		fmt.Fprintln(stderr)
	}
	why := "stopped by a failed run"
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		why = "interrupted"
	}
	if finished > 0 {
		fmt.Fprintf(stderr, "%s: the %d of %d runs that finished:\n", why, finished, total)
		if perr := print(); perr != nil {
			return perr
		}
	}
	return fmt.Errorf("%s: %w; no results file written", why, err)
}

// save writes the recorded trace (when rec is set), the results file and
// the plots, as the flags ask; the allocation plots' paths go to stderr.
func (o *simulateOptions) save(stderr io.Writer, res *sim.SweepResult, rec *recorder) error {
	if rec != nil {
		if err := atomicfile.WriteWith(o.recordTrace, 0o644, func(w io.Writer) error { return sim.WriteTrace(w, rec.jobs) }); err != nil {
			return badFlag(simFlagRecordTrace, err)
		}
	}
	if o.out != "" {
		if err := atomicfile.WriteWith(o.out, 0o644, func(w io.Writer) error { return res.WriteJSON(w) }); err != nil {
			return badFlag(simFlagOut, err)
		}
	}
	if o.plot != "" {
		if err := report.SaveJCTCDF(o.plot, report.SeriesFromRuns(res.Runs), report.SimOptions{Title: "JCT CDF, " + o.cluster.Name}); err != nil {
			return badFlag(simFlagPlot, err)
		}
	}
	if o.plotAlloc != "" {
		paths, err := report.SaveAllocations(o.plotAlloc, res.Runs, report.SimOptions{Title: o.cluster.Name})
		if err != nil {
			if len(paths) > 0 {
				err = fmt.Errorf("%w (written before it: %s)", err, strings.Join(paths, ", "))
			}
			return badFlag(simFlagPlotAlloc, err)
		}
		fmt.Fprintf(stderr, "allocation plots: %s\n", strings.Join(paths, ", "))
	}
	return nil
}

// writesToTerminal reports whether w is a terminal (progress is then
// redrawn in place).
func writesToTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// printProgress draws a progress bar on stderr: rewritten in place on a
// terminal, one line per finished run otherwise.
func printProgress(w io.Writer, tty bool, done, total int, p simcore.Point, elapsed time.Duration) {
	const width = 30
	filled := width * done / total
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	line := fmt.Sprintf("simulate [%s] %d/%d runs, %s (last: %s+%s load %g seed %d)", bar, done, total, elapsed.Round(time.Millisecond), p.Policy, p.Strategy, p.JobsPerHour, p.Seed)
	if tty {
		fmt.Fprintf(w, "\r%s\x1b[K", line)
		if done == total {
			fmt.Fprintln(w)
		}
		return
	}
	fmt.Fprintln(w, line)
}

// printSweep prints one row per run.
func printSweep(w io.Writer, res *sim.SweepResult) error {
	t := newTable(w)
	t.Header([]string{"strategy", "policy", "load (jobs/h)", "seed", "jobs", "JCT mean h", "median h", "p95 h", "p99 h", "queue mean h", "makespan h", "GPU %", "CPU %", "mem %"})
	for _, r := range res.Runs {
		x := r.Result
		load, seed := fmt.Sprintf("%g", r.Point.JobsPerHour), fmt.Sprint(r.Point.Seed)
		if r.Point.JobsPerHour == 0 {
			load, seed = "trace", "-"
		}
		row := []string{r.Point.Strategy, r.Point.Policy, load, seed, fmt.Sprint(x.JCT.N),
			f2(x.JCT.MeanHours), f2(x.JCT.MedianHours), f2(x.JCT.P95Hours), f2(x.JCT.P99Hours),
			f2(x.QueueingDelay.MeanHours), f2(x.MakespanS / 3600),
			f1(x.Shares.GPUPct), f1(x.Shares.CPUPct), f1(x.Shares.MemPct)}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	if len(res.Runs) > 0 {
		w0 := res.Runs[0].Result.Window
		win := "jobs " + w0.String()
		if w0.IsAll() {
			win = "all jobs"
		}
		fmt.Fprintf(w, "%s, %d GPUs, round %gs; JCT over %s\n", res.Runs[0].Result.Cluster, res.Runs[0].Result.GPUs, res.Runs[0].Result.RoundS, win)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, r := range res.Runs {
		if r.Result.Truncated {
			fmt.Fprintf(w, "%s+%s at %g jobs/h (seed %d): truncated at --%s (%.1f h); figures over the jobs that finished\n",
				r.Point.Policy, r.Point.Strategy, r.Point.JobsPerHour, r.Point.Seed, simFlagMaxHours, r.Result.EndS/3600)
		}
	}
	return nil
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
