package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/report"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
	"github.com/synergy-sched/synergy/scheduler/joint"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Flag names of `synergy simulate` on typed GPUs (Gavel's round mechanism:
// Gavel's policies, the joint policy, Synergy's fair and tune; typedRun
// chooses it by the names); --policies, --strategies, --seed, --loads,
// --num-jobs, --multi-gpu, --window, --round, --out, --json and --workers
// are shared.
const (
	gvFlagTrace        = "gavel-trace"
	gvFlagGenerate     = "gavel-generate"
	gvFlagThroughputs  = "throughputs"
	gvFlagClusterSpec  = "cluster-spec"
	gvFlagPerServer    = "gpus-per-server"
	gvFlagPriorities   = "priorities"
	gvFlagSLOs         = "slos"
	gvFlagCorrected    = "agnostic-corrected"
	gvFlagRecord       = "gavel-record-trace"
	gvFlagIdeal        = "ideal"
	gvFlagPrices       = "prices"
	gvFlagEntities     = "gavel-entities"
	gvFlagFromProfiles = "throughputs-from-profiles"
	gvFlagProfileFrac  = "gavel-profiling-fraction"
	gvFlagSensitivity  = "sensitivity"
)

func gavelFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: gvFlagTrace, Usage: "typed runs: replay a Gavel trace (10 tab-separated fields per job) with Gavel's round mechanism"},
		&cli.StringFlag{Name: gvFlagGenerate, Usage: "typed runs: Gavel's generator, continuous (Poisson at --loads jobs/h, measured on --window, default 4000-4999) or static (--num-jobs at t = 0)"},
		&cli.StringFlag{Name: gvFlagThroughputs, Usage: "typed runs: Gavel's throughputs JSON (worker type → \"('<model>', <scale factor>)\" → \"null\": steps/s)"},
		&cli.StringFlag{Name: gvFlagFromProfiles, Usage: "typed runs: throughput rows from profiles (comma-separated files or directories of *.json): one job per job.name, one row entry per gpu.type, read at the type's GPU-proportional CPUs and memory (the cluster JSON's, else 3 CPUs and 62.5 GB per GPU); with or instead of --throughputs"},
		&cli.StringFlag{Name: gvFlagClusterSpec, Value: "36:36:36", Usage: "typed runs: GPUs per type, V100:P100:K80 (36:36:36; physical = 8:16:24), name=count:… for any types in priority order, or a cluster JSON whose servers have gpu_type"},
		&cli.StringFlag{Name: gvFlagPerServer, Usage: "typed runs: GPUs per server per type, same shape as --cluster-spec (default 1 each, as Gavel)"},
		&cli.BoolFlag{Name: gvFlagPriorities, Usage: "Gavel generator: priority 5 for 20% of jobs"},
		&cli.BoolFlag{Name: gvFlagSLOs, Usage: "Gavel generator: SLOs of 1.2×, 2× or 10× the V100 duration (counted as violations in the results)"},
		&cli.BoolFlag{Name: gvFlagCorrected, Usage: "typed runs: agnostic finish_time_fairness and min_total_duration see every type's real throughput (default: Gavel's baseline, which copies the V100 throughput to every type, its issue #248)"},
		&cli.BoolFlag{Name: gvFlagIdeal, Usage: "typed runs: apply each allocation exactly (fluid, no rounds), to measure what the round mechanism loses"},
		&cli.StringFlag{Name: gvFlagPrices, Usage: "typed runs: price file (JSON: hourly price per GPU of each type, optionally changing over time; docs/gavel.md): each job's cost and the total in the results, and the prices max_sum_throughput_normalized_by_cost_perf reads"},
		&cli.StringFlag{Name: gvFlagEntities, Usage: "typed runs: entities JSON for max_min_fairness_water_filling[_perf] (entity names, weights, fairness or fifo inside, job ids; docs/gavel.md)"},
		&cli.StringFlag{Name: gvFlagRecord, Usage: "Gavel generator: write the jobs of the (single) run as a Gavel trace"},
		&cli.StringFlag{Name: gvFlagSensitivity, Usage: "typed runs: each job type's CPU and memory sensitivity, JOBTYPE=zoo:MODEL or JOBTYPE=PROFILE.json, comma-separated (JOBTYPE a Gavel job type or its model, e.g. ResNet-50=zoo:res50): jobs then run at the file's rate × their matrix at the CPUs and memory they hold over it at their ideal (docs/joint.md); job types not named are insensitive"},
		&cli.FloatFlag{Name: gvFlagProfileFrac, Usage: "typed runs, packing policies: each new job is profiled on this `FRACTION` (0–1) of the co-located cells and its pair throughputs are estimated by Gavel's throughput estimator (matrix completion; Gavel's --profiling_percentage); pairs still run at the file's. Default: every pair known from the file"},
	}
}

// gavelHelp is the typed part of `synergy simulate --help`.
func gavelHelp() string {
	return "Typed GPUs (chosen by the names: a Gavel policy or joint in --policies; fifo with --gavel-trace or\n" +
		"--gavel-generate): Gavel's round mechanism (360 s rounds, priorities = allocation / share received, allocation\n" +
		"recomputed at most every 1920 s) on a typed cluster (--cluster-spec), over --gavel-trace FILE or\n" +
		"--gavel-generate continuous|static (default continuous), with --throughputs FILE. Policies: " + strings.Join(gavelPolicyNames(), ", ") + ",\n" +
		"and joint (GPU type, CPUs and memory together: max_min_fairness_perf on each job's rate at the CPUs and memory\n" +
		"TUNE gives it on each type, TUNE inside servers; --sensitivity gives the jobs' matrices). --strategies fair,tune\n" +
		"there adds Synergy's strategies under its FIFO, blind to GPU types, to the same table.\n" +
		"Defaults there: --seed 0, --round 6m. Jobs are numbered from 0 in arrival order, as Gavel numbers them."
}

func gavelPolicyNames() []string {
	return append(append(append(append([]string(nil), gavel.PolicyNames...), gavel.LPPolicyNames...), gavel.HierarchicalPolicyNames...), gavel.PackedPolicyNames...)
}

type gavelOptions struct {
	sweep gavel.Sweep
	// profileRows are the throughput rows read from profiles, reported
	// with the results.
	profileRows []gavel.ProfileRow
	record      string
	// typedCols: the table shows each row's CPU and memory placement
	// (joint, Synergy's strategies or sensitivities are in the run).
	typedCols bool
	out       string
	json      bool
	plot      string
	// warnings go to stderr before the first run.
	warnings []string
	// sensitive: --sensitivity gave matrices.
	sensitive bool
}

func parseGavelFlags(c *cli.Command) (gavelOptions, error) {
	var o gavelOptions
	s := &o.sweep
	if err := refuseIgnored(c, true); err != nil {
		return o, err
	}
	if c.IsSet(gvFlagTrace) && c.IsSet(gvFlagGenerate) {
		return o, badFlag(gvFlagGenerate, fmt.Errorf("cannot be used with --%s: give one workload", gvFlagTrace))
	}
	for _, f := range []string{simFlagTrace, simFlagPhilly} {
		if c.IsSet(f) {
			return o, badFlag(f, errors.New("is Synergy's workload; typed runs take --gavel-trace or --gavel-generate"))
		}
	}
	if c.IsSet(simFlagPlotAlloc) {
		return o, badFlag(simFlagPlotAlloc, errors.New("typed runs record no allocation over time; it draws runs on an untyped cluster (--cluster)"))
	}
	share := gavel.Share(gavel.DefaultShare)
	spec := c.String(gvFlagClusterSpec)
	if !c.IsSet(gvFlagClusterSpec) && c.IsSet(simFlagCluster) {
		spec = c.String(simFlagCluster) // a typed cluster JSON given as Synergy's --cluster
	}
	if spec == "physical" {
		spec = "8:16:24"
	}
	var err error
	if strings.HasSuffix(spec, ".json") {
		cl, err := scheduler.LoadCluster(spec)
		if err == nil {
			s.Config.Cluster, err = gavel.SpecFromCluster(cl)
		}
		if err != nil {
			return o, badFlag(gvFlagClusterSpec, err)
		}
		share = gavel.ClusterShare(cl)
		o.warnings = append(o.warnings, mixedShares(cl)...)
	} else if s.Config.Cluster, err = gavel.ParseClusterSpec(spec, c.String(gvFlagPerServer)); err != nil {
		return o, badFlag(gvFlagClusterSpec, err)
	}
	if err := o.parseGavelThroughputs(c, share); err != nil {
		return o, err
	}
	if err := o.parseGavelPrices(c); err != nil {
		return o, err
	}
	if err := o.parseGavelWorkload(c); err != nil {
		return o, err
	}
	if err := o.parseGavelSweep(c); err != nil {
		return o, err
	}
	if err := o.parseTyped(c, share); err != nil {
		return o, err
	}
	if err := s.CheckRunnable(); err != nil {
		return o, badFlag(gvFlagClusterSpec, err)
	}
	return o, s.Check()
}

// parseTyped reads what the typed placement adds to Gavel's mechanism:
// Synergy's strategies (--strategies, when given), the job types'
// sensitivities, and the hook that builds joint and Synergy's points.
func (o *gavelOptions) parseTyped(c *cli.Command, share gavel.Share) error {
	s := &o.sweep
	if c.IsSet(simFlagStrategies) {
		for _, st := range splitList(c.String(simFlagStrategies)) {
			if !slices.Contains(joint.StrategyNames(), st) {
				return badFlag(simFlagStrategies, fmt.Errorf("%q does not run on typed GPUs (%s do, under Synergy's fifo)", st, strings.Join(joint.StrategyNames(), ", ")))
			}
			s.Strategies = append(s.Strategies, st)
		}
		s.SynergyPolicy = joint.SynergyFIFO
	}
	sens, err := parseSensitivities(c.String(gvFlagSensitivity))
	if err != nil {
		return badFlag(gvFlagSensitivity, err)
	}
	if unused := sens.Unused(o.runJobTypes()); len(unused) > 0 {
		return badFlag(gvFlagSensitivity, fmt.Errorf("%s: no job type of the run (%s) by that name or model; job types not named stay insensitive",
			strings.Join(unused, ", "), o.workloadName()))
	}
	o.sensitive = len(sens) > 0
	o.typedCols = len(sens) > 0 || len(s.Strategies) > 0 || slices.Contains(s.Policies, joint.Policy)
	if !o.typedCols {
		return nil // Gavel exactly: no CPUs or memory modelled
	}
	if oneGPUServers(s.Config.Cluster) {
		o.warnings = append(o.warnings, fmt.Sprintf("every server holds one GPU (--%s): a job takes its server's CPUs and memory whole, so CPU- and memory-aware placement cannot differ from its blind twin here (%s = max_min_fairness_perf, tune = fair, job by job)",
			gvFlagPerServer, joint.Policy))
	}
	if s.Config.Ideal {
		return badFlag(gvFlagIdeal, errors.New("applies allocations fluidly, without servers: not with joint, --strategies or --sensitivity"))
	}
	for _, p := range s.Policies {
		if p == joint.Policy {
			continue
		}
		if pol, err := gavel.NewPolicy(p, 0, false); err == nil {
			if _, packing := pol.(gavel.PackingPolicy); packing {
				return badFlag(simFlagPolicies, fmt.Errorf("%s co-locates jobs on shared GPUs, which cannot run with CPUs and memory per job (--%s, %s or --%s in this sweep): run it in a sweep without them",
					p, gvFlagSensitivity, joint.Policy, simFlagStrategies))
			}
		}
	}
	s.Plugins = joint.Plugins(joint.NewCluster(s.Config.Cluster, share), sens)
	return nil
}

// runJobTypes lists the job types the run can hold: a trace's, or every
// template the generator draws from.
func (o *gavelOptions) runJobTypes() []string {
	var out []string
	if o.sweep.Trace != nil {
		for _, j := range o.sweep.Trace {
			out = append(out, j.JobType)
		}
		return out
	}
	for _, t := range gavel.Templates {
		out = append(out, t.Model)
	}
	return out
}

// workloadName says where the run's job types come from.
func (o *gavelOptions) workloadName() string {
	if o.sweep.Trace != nil {
		return "the trace's"
	}
	return "Gavel's generator's templates"
}

// parseGavelThroughputs reads --throughputs (Gavel's file) and/or
// --throughputs-from-profiles (rows from profiles, each read at its type's
// share: the cluster JSON's CPUs and memory per GPU, else Synergy's default
// server's); an entry both give is an error.
func (o *gavelOptions) parseGavelThroughputs(c *cli.Command, share gavel.Share) error {
	s := &o.sweep
	path, profs := c.String(gvFlagThroughputs), c.String(gvFlagFromProfiles)
	if path == "" && profs == "" {
		return badFlag(gvFlagThroughputs, fmt.Errorf("required on typed GPUs (Gavel's throughputs JSON), unless --%s gives the rows", gvFlagFromProfiles))
	}
	var err error
	if path != "" {
		if s.Throughputs, err = gavel.LoadThroughputs(path); err != nil {
			return badFlag(gvFlagThroughputs, err)
		}
	}
	if profs == "" {
		return nil
	}
	paths, err := gavel.ProfilePaths(profs)
	if err != nil {
		return badFlag(gvFlagFromProfiles, err)
	}
	t, rows, err := gavel.ThroughputsFromProfiles(paths, share)
	if err != nil {
		return badFlag(gvFlagFromProfiles, err)
	}
	o.profileRows = rows
	if s.Throughputs == nil {
		s.Throughputs = t
		return nil
	}
	if err := s.Throughputs.Merge(t, "profiles"); err != nil {
		return badFlag(gvFlagFromProfiles, err)
	}
	return nil
}

// parseGavelPrices reads --prices: every type of the cluster needs a price;
// the cost policy needs the file, and ideal mode cannot charge micro-tasks.
func (o *gavelOptions) parseGavelPrices(c *cli.Command) error {
	s := &o.sweep
	path := c.String(gvFlagPrices)
	if path == "" {
		for _, p := range splitList(c.String(simFlagPolicies)) {
			if gavel.NeedsPrices(p) {
				return badFlag(gvFlagPrices, fmt.Errorf("required by the policy %s", p))
			}
		}
		return nil
	}
	if c.Bool(gvFlagIdeal) {
		return badFlag(gvFlagPrices, fmt.Errorf("cannot be used with --%s: cost is charged per micro-task, which ideal mode does not run", gvFlagIdeal))
	}
	f, _, err := safefile.Open(path, gavel.MaxFileBytes, "prices")
	if err != nil {
		return badFlag(gvFlagPrices, err)
	}
	defer f.Close()
	if s.Config.Prices, err = gavel.ParsePrices(f); err != nil {
		return badFlag(gvFlagPrices, fmt.Errorf("%s: %w", path, err))
	}
	if err := s.Config.Prices.Check(s.Config.Cluster.Types); err != nil {
		return badFlag(gvFlagPrices, fmt.Errorf("%s: %w", path, err))
	}
	return nil
}

func (o *gavelOptions) parseGavelWorkload(c *cli.Command) error {
	s := &o.sweep
	if p := c.String(gvFlagTrace); p != "" {
		var err error
		if s.Trace, err = gavel.LoadTrace(p); err != nil {
			return badFlag(gvFlagTrace, err)
		}
		for i, j := range s.Trace {
			if _, err := s.Throughputs.Row(j.Key(), s.Config.Cluster.Types); err != nil {
				return badFlag(gvFlagTrace, fmt.Errorf("%s: job %d (%s): %w", p, i, j.JobType, err))
			}
		}
		return nil
	}
	g := &gavel.GeneratorConfig{MultiGPU: c.Bool(simFlagMultiGPU), MultiPriority: c.Bool(gvFlagPriorities), SLOs: c.Bool(gvFlagSLOs)}
	s.Generator = g
	switch c.String(gvFlagGenerate) {
	case "continuous", "": // a typed run without a workload flag: Gavel's generator
		loads, err := parsePositiveList(c.String(simFlagLoads))
		if err != nil {
			return badFlag(simFlagLoads, err)
		}
		s.Loads = loads
		g.NumJobs = c.Int(simFlagNumJobs)
		if g.NumJobs < 0 {
			return badFlag(simFlagNumJobs, fmt.Errorf("%d is negative", g.NumJobs))
		}
	case "static":
		if g.NumJobs = c.Int(simFlagNumJobs); g.NumJobs < 1 {
			return badFlag(simFlagNumJobs, errors.New("a static Gavel workload needs --num-jobs ≥ 1"))
		}
		s.Loads = []float64{0}
	default:
		return badFlag(gvFlagGenerate, fmt.Errorf("%q: want continuous or static", c.String(gvFlagGenerate)))
	}
	if g.NumJobs > gavel.MaxJobs {
		return badFlag(simFlagNumJobs, fmt.Errorf("%d is above %d, the most jobs one Gavel-mode run takes", g.NumJobs, gavel.MaxJobs))
	}
	return nil
}

func (o *gavelOptions) parseGavelSweep(c *cli.Command) error {
	s := &o.sweep
	s.Seeds = []uint64{0}
	if c.IsSet(simFlagSeed) {
		s.Seeds = nil
		for _, f := range splitList(c.String(simFlagSeed)) {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return badFlag(simFlagSeed, fmt.Errorf("%q is not a non-negative integer", f))
			}
			s.Seeds = append(s.Seeds, v)
		}
	}
	if s.Policies = splitList(c.String(simFlagPolicies)); len(s.Policies) == 0 {
		return badFlag(simFlagPolicies, errors.New("no policies given"))
	}
	for _, p := range s.Policies {
		if p == joint.Policy {
			continue
		}
		if _, err := gavel.NewPolicy(p, 0, false); err != nil {
			return badFlag(simFlagPolicies, err)
		}
	}
	s.Config.RoundS = gavel.DefaultRoundS
	if c.IsSet(simFlagRound) {
		if s.Config.RoundS = c.Duration(simFlagRound).Seconds(); !(s.Config.RoundS > 0) {
			return badFlag(simFlagRound, fmt.Errorf("%v is not a positive duration", c.Duration(simFlagRound)))
		}
	}
	if err := o.parseGavelWindow(c.String(simFlagWindow)); err != nil {
		return badFlag(simFlagWindow, err)
	}
	s.Config.Check = true
	s.Config.Ideal = c.Bool(gvFlagIdeal)
	var err error
	if s.Config.MaxS, err = maxSeconds(c); err != nil {
		return err
	}
	s.Corrected = c.Bool(gvFlagCorrected)
	if c.IsSet(gvFlagProfileFrac) {
		f := c.Float(gvFlagProfileFrac)
		if !(f > 0 && f <= 1) {
			return badFlag(gvFlagProfileFrac, fmt.Errorf("%v: need a fraction above 0 and at most 1", f))
		}
		s.Estimate = &gavel.EstimatorConfig{ProfileFraction: f}
	}
	if p := c.String(gvFlagEntities); p != "" {
		var err error
		if s.Entities, err = gavel.LoadEntities(p); err != nil {
			return badFlag(gvFlagEntities, err)
		}
	}
	if s.Workers = c.Int(simFlagWorkers); s.Workers < 1 {
		return badFlag(simFlagWorkers, fmt.Errorf("%d: need at least 1", s.Workers))
	}
	o.out, o.json, o.record = c.String(simFlagOut), c.Bool(simFlagJSON), c.String(gvFlagRecord)
	if o.plot = c.String(simFlagPlot); o.plot != "" {
		if _, err := report.FormatOf(o.plot); err != nil {
			return badFlag(simFlagPlot, err)
		}
	}
	for _, f := range []struct{ flag, path string }{{simFlagOut, o.out}, {simFlagPlot, o.plot}, {gvFlagRecord, o.record}} {
		if err := checkOutputDir(f.path); err != nil {
			return badFlag(f.flag, err)
		}
	}
	if o.record != "" && (s.Generator == nil || len(s.Loads) != 1 || len(s.Seeds) != 1) {
		return badFlag(gvFlagRecord, errors.New("needs --gavel-generate with a single --loads value and a single --seed"))
	}
	return nil
}

// parseGavelWindow: a trace or a static workload reports on all jobs by
// default; a continuous one on jobs 4000-4999 (Gavel's paper), and ends
// when they have finished.
func (o *gavelOptions) parseGavelWindow(w string) error {
	s := &o.sweep
	continuous := s.Generator != nil && s.Generator.NumJobs == 0
	def := simcore.All
	if continuous {
		def = simcore.Steady
	}
	win, err := simcore.ParseWindow(w, def)
	switch {
	case err != nil:
		return err
	case win.IsAll() && continuous:
		return errors.New("all: a continuous workload never ends; give FIRST-LAST or --num-jobs")
	case win.IsAll():
		return nil // no window: every job, and the run ends when they have
	case win.Last >= gavel.MaxJobs:
		return fmt.Errorf("%q reaches job %d: a Gavel-mode run takes at most %d jobs", strings.TrimSpace(w), win.Last, gavel.MaxJobs)
	case s.Trace != nil && win.Last >= len(s.Trace):
		return fmt.Errorf("%q: the trace has jobs 0-%d", strings.TrimSpace(w), len(s.Trace)-1)
	}
	if s.Generator != nil {
		warns, err := windowPastJobs(win, s.Generator.NumJobs)
		if err != nil {
			return err
		}
		o.warnings = append(o.warnings, warns...)
	}
	s.Config.Window = &win
	return nil
}

func runGavelSimulate(ctx context.Context, c *cli.Command) error {
	o, err := parseGavelFlags(c)
	if err != nil {
		return err
	}
	stdout, stderr := c.Root().Writer, c.Root().ErrWriter
	for _, w := range o.warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	start := time.Now()
	lw := &lockedWriter{w: stderr}
	o.sweep.RunProgress = func(p simcore.Point, rounds int, nowS float64, note string) {
		if note != "" {
			note = "; " + note
		}
		fmt.Fprintf(lw, "gavel: running %s: %.1f h simulated, %d rounds%s (%.0fs)\n", pointLabel(p), nowS/3600, rounds, note, time.Since(start).Seconds())
	}
	res, err := o.sweep.Run(ctx, func(done, total int, p simcore.Point) {
		fmt.Fprintf(lw, "gavel: %d/%d runs (%s) %.1fs\n", done, total, pointLabel(p), time.Since(start).Seconds())
	})
	if err != nil {
		return stopped(stdout, stderr, false, len(res.Runs), len(o.sweep.Points()), func() error { return printGavelSweep(stdout, res, o.labels()) }, err)
	}
	res.ProfileRows = o.profileRows
	if o.record != "" {
		if err := o.writeRecordedTrace(res); err != nil {
			return badFlag(gvFlagRecord, err)
		}
	}
	if o.out != "" {
		if err := atomicfile.WriteWith(o.out, 0o644, func(w io.Writer) error { return res.WriteJSON(w) }); err != nil {
			return badFlag(simFlagOut, err)
		}
	}
	if o.plot != "" {
		if err := report.SaveJCTCDF(o.plot, report.SeriesFromRuns(res.Runs), report.SimOptions{Title: "JCT CDF, " + o.sweep.Config.Cluster.String()}); err != nil {
			return badFlag(simFlagPlot, err)
		}
	}
	if o.json {
		return res.WriteJSON(stdout)
	}
	if err := printProfileRows(stdout, res.ProfileRows); err != nil {
		return err
	}
	return printGavelSweep(stdout, res, o.labels())
}

// writeRecordedTrace draws the run's jobs again (the generator is
// deterministic) and writes them in Gavel's trace format.
func (o *gavelOptions) writeRecordedTrace(res *gavel.SweepResult) error {
	s := &o.sweep
	g := *s.Generator
	g.Seed = s.Seeds[0]
	if s.Loads[0] > 0 {
		g.MeanInterarrivalS = 3600 / s.Loads[0]
	}
	gen, err := gavel.NewGenerator(g, s.Throughputs)
	if err != nil {
		return err
	}
	n := 0
	for _, r := range res.Runs {
		n = max(n, r.Result.NumJobs)
	}
	jobs := gen.Take(n)
	return atomicfile.WriteWith(o.record, 0o644, func(w io.Writer) error { return gavel.WriteTrace(w, jobs) })
}

// printProfileRows lists the throughput rows read from profiles, each with
// the cell it was read at; an emulated row says so.
func printProfileRows(w io.Writer, rows []gavel.ProfileRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "throughputs from profiles:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "job type\tGPU type\tsteps/s\tread at (per GPU)\tsource\tprofile")
	for _, r := range rows {
		src := "measured"
		if r.Emulated {
			src = "EMULATED (no GPU ran)"
		}
		at := fmt.Sprintf("%g CPUs, %s", r.CPUsPerGPU, units.FormatGB(r.MemBytesPerGPU))
		if r.Clamped {
			at += " (outside the profile: its edge)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%s\t%s\t%s\n", r.JobType, r.GPUType, r.StepsPerS, at, src, r.File)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// rowLabels says what the table's rows ran: typed adds the column of each
// row's CPUs and memory (placement); sensitive says --sensitivity gave
// matrices (without, the joint policy's TUNE sees every job insensitive);
// trace marks a trace's rows (no arrival rate).
type rowLabels struct{ typed, sensitive, trace bool }

func (o *gavelOptions) labels() rowLabels {
	return rowLabels{typed: o.typedCols, sensitive: o.sensitive, trace: o.sweep.Trace != nil}
}

// load is a row's jobs/h column: the rate, or what the workload is.
func (l rowLabels) load(p simcore.Point) string {
	switch {
	case l.trace:
		return "trace"
	case p.JobsPerHour == 0:
		return "static"
	}
	return strconv.FormatFloat(p.JobsPerHour, 'g', -1, 64)
}

// pointLabel names a running point in progress lines.
func pointLabel(p simcore.Point) string {
	s := p.Policy
	if p.Strategy != "" {
		s += "+" + p.Strategy
	}
	return fmt.Sprintf("%s, seed %d, %g jobs/h", s, p.Seed, p.JobsPerHour)
}

// lockedWriter serialises writes from the sweep's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// printGavelSweep prints one row per run, labelled by what it ran.
func printGavelSweep(w io.Writer, res *gavel.SweepResult, l rowLabels) error {
	typed := l.typed
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	costs := len(res.Runs) > 0 && res.Runs[0].Result.TotalCost != nil
	slos := false
	for _, r := range res.Runs {
		slos = slos || r.Result.SLOJobs > 0
	}
	head := "policy\tjobs/h\tseed\tfinished\tmean JCT h\tmakespan h\tutilisation\tlease ext.\trounds\t"
	if typed {
		head = "policy\tCPUs, memory\t" + strings.TrimPrefix(head, "policy\t")
	}
	if costs {
		head += "cost\t"
	}
	if slos {
		head += "SLO viol.\t"
	}
	fmt.Fprintln(tw, head)
	defer func() {
		for _, r := range res.Runs {
			if r.Result.Truncated {
				fmt.Fprintf(w, "%s at %g jobs/h (seed %d): truncated at --%s; means over the jobs that finished\n", r.Point.Policy, r.Point.JobsPerHour, r.Point.Seed, simFlagMaxHours)
			}
		}
	}()
	for _, r := range res.Runs {
		x := r.Result
		ext := "-"
		if x.LeaseExtensions != nil && x.LeaseExtensions[1] > 0 {
			ext = fmt.Sprintf("%.1f%%", 100*float64(x.LeaseExtensions[0])/float64(x.LeaseExtensions[1]))
		}
		if typed {
			fmt.Fprintf(tw, "%s\t%s\t", rowPolicy(r.Point), rowPlacement(r.Point, l.sensitive))
		} else {
			fmt.Fprintf(tw, "%s\t", r.Point.Policy)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%.3f\t%.3f\t%.3f\t%s\t%d\t", l.load(r.Point), r.Point.Seed,
			x.NumFinished, windowSize(x), x.MeanJCTS/3600, x.MakespanS/3600, x.Utilization, ext, x.Rounds)
		if costs {
			fmt.Fprintf(tw, "%.2f\t", *x.TotalCost)
		}
		if slos {
			fmt.Fprintf(tw, "%d/%d\t", x.SLOViolations, x.SLOJobs)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// oneGPUServers says whether every server of the cluster holds one GPU.
func oneGPUServers(c gavel.ClusterSpec) bool {
	for i, n := range c.GPUsPerServer {
		if n != 1 && c.GPUs[i] > 0 {
			return false
		}
	}
	return true
}

func windowSize(r *simcore.Result) int {
	if r.Window == nil {
		return r.NumJobs
	}
	return r.Window.Size(r.NumJobs)
}

// rowPolicy names a typed run's policy: Synergy's rows say so.
func rowPolicy(p simcore.Point) string {
	if p.Strategy != "" {
		return p.Policy + " (Synergy)"
	}
	return p.Policy
}

// rowPlacement is how a typed run gives CPUs and memory: Synergy's
// strategy, TUNE for the joint policy, the GPU-proportional share for
// Gavel's policies.
func rowPlacement(p simcore.Point, sensitive bool) string {
	switch {
	case p.Strategy != "":
		return p.Strategy
	case p.Policy == joint.Policy && sensitive:
		return joint.Tune
	case p.Policy == joint.Policy:
		return "proportional (no --" + gvFlagSensitivity + ")"
	}
	return "proportional"
}

// mixedShares warns of each GPU type whose servers give their GPUs
// different CPUs or memory: a typed run gives every GPU of a type the
// type's average (gavel.ClusterShare), which no such server has.
func mixedShares(cl scheduler.Cluster) []string {
	type per struct{ cpus, mem float64 }
	first := map[string]per{}
	var out []string
	warned := map[string]bool{}
	for _, s := range cl.Servers {
		if s.GPUs <= 0 || warned[s.GPUType] {
			continue
		}
		p := per{s.CPUs / float64(s.GPUs), float64(s.MemBytes) / float64(s.GPUs)}
		f, ok := first[s.GPUType]
		if !ok {
			first[s.GPUType] = p
			continue
		}
		if f != p {
			warned[s.GPUType] = true
			out = append(out, fmt.Sprintf("--%s: %s servers give their GPUs different CPUs or memory (%g CPUs, %s per GPU on one; %g CPUs, %s on %s): typed runs give every %s GPU the type's average",
				gvFlagClusterSpec, s.GPUType, f.cpus, units.FormatGB(f.mem), p.cpus, units.FormatGB(p.mem), s.Name, s.GPUType))
		}
	}
	return out
}
