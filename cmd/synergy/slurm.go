package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/slurm"
)

// Flag names of `synergy slurm`.
const (
	slurmFlagConf      = "slurm-conf"
	slurmFlagPartition = "partition"
	slurmFlagStrategy  = "strategy"
	slurmFlagPolicy    = "policy"
	slurmFlagJSON      = "json"
	slurmFlagDryRun    = "dry-run"
	slurmFlagInterval  = "interval"
	slurmFlagRound     = "round"
	slurmFlagGrace     = "grace"
	slurmFlagJobComp   = "jobcomp"
	slurmFlagUsedOut   = "used-out"
	slurmFlagProfile   = "profile"
	slurmFlagGPUs      = "gpus"
	slurmFlagHold      = "hold"
	slurmFlagFirst     = "profile-first"
	slurmFlagData      = "data"
	slurmFlagPFlag     = "profile-args"
	slurmFlagCache     = "profile-cache"
	slurmFlagBin       = "synergy-bin"
)

func slurmCommand() *cli.Command {
	conf := &cli.StringFlag{Name: slurmFlagConf, Sources: cli.EnvVars("SLURM_CONF"), Usage: "slurm.conf of the cluster (passed to Slurm's commands as SLURM_CONF)"}
	part := &cli.StringFlag{Name: slurmFlagPartition, Usage: "only this partition's nodes and jobs; every held job in it opts in (default: all partitions, jobs opt in by naming a profile)"}
	strategy := &cli.StringFlag{Name: slurmFlagStrategy, Value: "tune", Usage: "allocation strategy: " + strings.Join(scheduler.StrategyNames(), ", ")}
	policy := &cli.StringFlag{Name: slurmFlagPolicy, Value: "fifo", Usage: "job-ordering policy: " + strings.Join(scheduler.PolicyNames(), ", ")}
	jsonOut := &cli.BoolFlag{Name: slurmFlagJSON, Usage: "print each pass as JSON (one object per line for watch)"}
	dry := &cli.BoolFlag{Name: slurmFlagDryRun, Usage: "plan and print, change nothing in Slurm"}
	return &cli.Command{
		Name:  "slurm",
		Usage: "run profiled jobs on a Slurm cluster: submit them sized by their profile, or place held jobs as `synergy schedule` does",
		Description: "Talks to Slurm through its commands (squeue --json, sinfo --json, scontrol, sbatch), as the user running it;\n" +
			"--slurm-conf or SLURM_CONF names the cluster. A job names its profile in its comment (" + "synergy:profile=PATH" + ",\n" +
			"which `synergy slurm submit` writes). See docs/slurm.md.",
		Commands: []*cli.Command{
			{
				Name:      "submit",
				Usage:     "submit a batch job with the CPUs and memory its profile needs on this cluster's nodes",
				ArgsUsage: "-- [SBATCH_OPTION...] SCRIPT [ARG...]",
				Description: "Reads the nodes' shape (of --partition), derives the job's ideal demand from the profile as `synergy schedule`\n" +
					"does (the smallest allocation reaching 95% of its best throughput, not the GPU-proportional share) and runs\n" +
					"sbatch --nodes=1 --ntasks=1 --gres=gpu:G --cpus-per-task=C --mem=M --comment=synergy:profile=PATH, then the\n" +
					"options and script after --. With --hold the job waits for `synergy slurm place`. Prints the job ID.",
				Flags: []cli.Flag{conf, part, jsonOut, dry,
					&cli.StringFlag{Name: slurmFlagProfile, Usage: "the job's profile JSON (from `synergy profile`)"},
					&cli.IntFlag{Name: slurmFlagGPUs, Usage: "GPUs to ask for (default: the profile's)"},
					&cli.BoolFlag{Name: slurmFlagHold, Usage: "submit held, for `synergy slurm place` to place"},
					&cli.BoolFlag{Name: slurmFlagFirst, Usage: "instead of --profile: profile SCRIPT with `synergy profile` as a Slurm job on one node (whole node, 1 GPU) first, or reuse the cached profile of the same script, arguments, dataset, flags and node shape; sbatch options after -- must then be written --name=value"},
					&cli.StringFlag{Name: slurmFlagData, Usage: "--profile-first: the dataset directory (synergy profile --data)"},
					&cli.StringFlag{Name: slurmFlagPFlag, Usage: "--profile-first: flags for synergy profile, as words split at spaces (\"--cpus=1,2 --mem-limits=16GiB,32GiB\")"},
					&cli.StringFlag{Name: slurmFlagCache, Usage: "--profile-first: directory of cached profiles (default: the user's cache directory/synergy/slurm-profiles)"},
					&cli.StringFlag{Name: slurmFlagBin, Usage: "--profile-first: the synergy binary the profiling job runs, on a path the nodes see (default: this one)"},
				},
				Action: runSlurmSubmit,
			},
			{
				Name:  "place",
				Usage: "one pass: place the held jobs that opted in, pin their node, GPUs, CPUs and memory, release them",
				Description: "Reads the nodes and what running jobs hold, and the held jobs with a profile (or every held job of\n" +
					"--partition), in submission order; places them with the strategy and policy exactly as `synergy schedule`\n" +
					"would on the same cluster (`synergy slurm cluster`) and queue; sets each placed job's NodeList, NumCPUs,\n" +
					"MinMemoryNode and Gres with one scontrol update that also records the placement in its comment, then releases\n" +
					"it. A job that does not fit stays held with the reason in its comment. A job found placed but still held (a\n" +
					"pass that stopped between update and release) is released, its resources counted as taken.\n\n" +
					namedHelp("Strategies", scheduler.StrategyHelp()) + "\n" + namedHelp("Policies", scheduler.PolicyHelp()),
				Flags:  []cli.Flag{conf, part, strategy, policy, jsonOut, dry},
				Action: runSlurmPlace,
			},
			{
				Name:  "watch",
				Usage: "place held jobs every --interval until interrupted; with --round, run Synergy's rounds",
				Description: "Runs `synergy slurm place` passes in a loop; a failed pass (slurmctld down) is reported and the next one tries again.\n" +
					"With --round D every D the policy and strategy decide again, as `synergy simulate`'s rounds do, over the\n" +
					"opted-in jobs, running and held: running jobs kept at their size stay on their nodes, the others are\n" +
					"preempted (USR1, --grace to checkpoint, requeued held) and re-placed or left held (docs/slurm.md).",
				Flags: []cli.Flag{conf, part, strategy, policy, jsonOut, dry,
					&cli.DurationFlag{Name: slurmFlagInterval, Value: 10 * time.Second, Usage: "time between passes"},
					&cli.DurationFlag{Name: slurmFlagRound, Usage: "run a round (Synergy's lease; its 300 s) every this long instead of passes; 0: passes"},
					&cli.DurationFlag{Name: slurmFlagGrace, Value: 60 * time.Second, Usage: "--round: how long a preempted job has to checkpoint and leave before it is requeued"},
				},
				Action: runSlurmWatch,
			},
			slurmRunsCommand(jsonOut),
			{
				Name:  "cluster",
				Usage: "print the Slurm cluster as `synergy schedule --cluster` reads it (its GPU nodes)",
				Description: "The cluster JSON the bridge places on; --used-out writes what running (and placed, not yet started) jobs\n" +
					"hold, for `synergy schedule --used`.",
				Flags: []cli.Flag{conf, part,
					&cli.StringFlag{Name: slurmFlagUsedOut, Usage: "write the resources jobs hold here (JSON)"},
				},
				Action: runSlurmCluster,
			},
		},
	}
}

// slurmBridge turns the flags into a bridge.
func slurmBridge(c *cli.Command) (*slurm.Bridge, error) {
	if c.Args().Len() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", c.Args().First())
	}
	b := &slurm.Bridge{Cmd: slurmExec(c), Config: slurm.Config{Partition: c.String(slurmFlagPartition)}}
	var err error
	if b.Config.Strategy, err = scheduler.NewStrategy(c.String(slurmFlagStrategy)); err != nil {
		return nil, badFlag(slurmFlagStrategy, err)
	}
	if b.Config.Policy, err = scheduler.NewPolicy(c.String(slurmFlagPolicy)); err != nil {
		return nil, badFlag(slurmFlagPolicy, err)
	}
	return b, nil
}

func slurmExec(c *cli.Command) slurm.Exec {
	if conf := c.String(slurmFlagConf); conf != "" {
		return slurm.Exec{Env: []string{"SLURM_CONF=" + conf}}
	}
	return slurm.Exec{}
}

func runSlurmPlace(ctx context.Context, c *cli.Command) error {
	b, err := slurmBridge(c)
	if err != nil {
		return err
	}
	res, err := slurmPass(ctx, b, c.Bool(slurmFlagDryRun))
	if err != nil {
		return fmt.Errorf("slurm place: %w", err)
	}
	if err := printSlurmPass(c.Root().Writer, res, c.Bool(slurmFlagJSON), c.Bool(slurmFlagDryRun)); err != nil {
		return err
	}
	if n := res.Errors(); n > 0 {
		return fmt.Errorf("slurm place: %d of %d actions failed", n, len(res.Applied))
	}
	return nil
}

// slurmPass runs one pass, or only plans it.
func slurmPass(ctx context.Context, b *slurm.Bridge, dry bool) (*slurm.Result, error) {
	if !dry {
		return b.RunPass(ctx)
	}
	snap, err := slurm.ReadSnapshot(ctx, b.Cmd)
	if err != nil {
		return nil, err
	}
	pass, err := slurm.PlanPass(snap, b.Config)
	if err != nil {
		return nil, err
	}
	res := &slurm.Result{Pass: pass}
	for _, a := range pass.Actions {
		res.Applied = append(res.Applied, slurm.Applied{Action: a})
	}
	return res, nil
}

func runSlurmWatch(ctx context.Context, c *cli.Command) error {
	b, err := slurmBridge(c)
	if err != nil {
		return err
	}
	if c.IsSet(slurmFlagRound) {
		return runSlurmRounds(ctx, c, b)
	}
	every := c.Duration(slurmFlagInterval)
	if every <= 0 {
		return badFlag(slurmFlagInterval, fmt.Errorf("%v: must be positive", every))
	}
	w, ew := c.Root().Writer, c.Root().ErrWriter
	t := time.NewTicker(every)
	defer t.Stop()
	for first := true; ; first = false {
		res, err := slurmPass(ctx, b, c.Bool(slurmFlagDryRun))
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(ew, "%s slurm watch: pass failed, retrying in %v: %v\n", time.Now().Format(time.TimeOnly), every, err)
		case !first && slurmQuiet(res):
		default:
			if err := printSlurmPass(w, res, c.Bool(slurmFlagJSON), c.Bool(slurmFlagDryRun)); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// slurmQuiet: a pass that changed nothing (no job placed, released or
// given a new reason) prints nothing in watch, after the first.
func slurmQuiet(res *slurm.Result) bool {
	for _, a := range res.Applied {
		if a.Kind != slurm.Wait || a.Changed || a.Err != nil {
			return false
		}
	}
	return true
}

func runSlurmCluster(ctx context.Context, c *cli.Command) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("unexpected argument %q", c.Args().First())
	}
	snap, err := slurm.ReadSnapshot(ctx, slurmExec(c))
	if err != nil {
		return fmt.Errorf("slurm cluster: %w", err)
	}
	pass, err := slurm.PlanPass(slurm.Snapshot{Nodes: snap.Nodes, Jobs: snap.Jobs}, slurm.Config{Partition: c.String(slurmFlagPartition), Strategy: scheduler.Fair{}})
	if err != nil {
		return fmt.Errorf("slurm cluster: %w", err)
	}
	for _, e := range pass.Excluded {
		fmt.Fprintln(c.Root().ErrWriter, "excluded:", e)
	}
	if len(pass.Cluster.Servers) == 0 {
		return errors.New("slurm cluster: no node with GPUs (gres gpu) that takes jobs")
	}
	if path := c.String(slurmFlagUsedOut); path != "" {
		used := struct {
			Servers []scheduler.Usage `json:"servers"`
		}{Servers: append([]scheduler.Usage{}, pass.Used...)}
		b, err := json.MarshalIndent(used, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
			return badFlag(slurmFlagUsedOut, err)
		}
	}
	b, err := json.MarshalIndent(pass.Cluster, "", "  ")
	if err != nil {
		return err
	}
	_, err = c.Root().Writer.Write(append(b, '\n'))
	return err
}

func runSlurmSubmit(ctx context.Context, c *cli.Command) error {
	req := slurm.SubmitRequest{Profile: c.String(slurmFlagProfile), GPUs: int(c.Int(slurmFlagGPUs)), Partition: c.String(slurmFlagPartition),
		Hold: c.Bool(slurmFlagHold), Sbatch: c.Args().Slice()}
	if req.GPUs < 0 {
		return badFlag(slurmFlagGPUs, fmt.Errorf("%d: must not be negative", req.GPUs))
	}
	w := c.Root().Writer
	if (req.Profile == "") == !c.Bool(slurmFlagFirst) {
		return fmt.Errorf("slurm submit: give --%s P.json or --%s (one of them)", slurmFlagProfile, slurmFlagFirst)
	}
	if c.Bool(slurmFlagFirst) {
		if c.Bool(slurmFlagDryRun) {
			return fmt.Errorf("slurm submit: --%s runs a profiling job: not with --%s", slurmFlagFirst, slurmFlagDryRun)
		}
		var err error
		if req.Profile, err = slurmProfileFirst(ctx, c, req.Partition); err != nil {
			return fmt.Errorf("slurm submit: --%s: %w", slurmFlagFirst, err)
		}
	}
	if c.Bool(slurmFlagDryRun) {
		snapOut, err := slurmExec(c).Run(ctx, "sinfo", "--json")
		if err != nil {
			return fmt.Errorf("slurm submit: read the nodes: %w", err)
		}
		nodes, err := slurm.ParseNodes(snapOut)
		if err != nil {
			return fmt.Errorf("slurm submit: %w", err)
		}
		sp, err := slurm.PlanSubmit(nodes, req)
		if err != nil {
			return slurmSubmitError(err)
		}
		return printSlurmSubmit(w, c.Root().ErrWriter, 0, sp, c.Bool(slurmFlagJSON))
	}
	id, sp, err := slurm.Submit(ctx, slurmExec(c), req)
	if err != nil {
		return slurmSubmitError(err)
	}
	return printSlurmSubmit(w, c.Root().ErrWriter, id, sp, c.Bool(slurmFlagJSON))
}

func slurmSubmitError(err error) error {
	if strings.HasPrefix(err.Error(), "no batch script") {
		return fmt.Errorf("slurm submit: %w", err)
	}
	return fmt.Errorf("slurm submit: --%s: %w", slurmFlagProfile, err)
}

// slurmSubmitJSON is what `synergy slurm submit --json` prints.
type slurmSubmitJSON struct {
	JobID      int      `json:"job_id,omitempty"`
	Name       string   `json:"name"`
	GPUs       int      `json:"gpus"`
	CPUs       int      `json:"cpus"`
	MemMiB     int64    `json:"mem_mib"`
	FairCPUs   float64  `json:"fair_cpus"`
	FairMemMiB float64  `json:"fair_mem_mib"`
	Speedup    float64  `json:"speedup"`
	Argv       []string `json:"argv"`
	Warnings   []string `json:"warnings"`
}

func printSlurmSubmit(w, ew io.Writer, id int, sp *slurm.SubmitPlan, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(slurmSubmitJSON{JobID: id, Name: sp.Job, GPUs: sp.GPUs, CPUs: sp.CPUs, MemMiB: sp.MemMiB,
			FairCPUs: sp.FairCPUs, FairMemMiB: sp.FairMemMiB, Speedup: sp.Speedup, Argv: sp.Argv, Warnings: append([]string{}, sp.Warnings...)}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	for _, warn := range sp.Warnings {
		fmt.Fprintln(ew, "warning:", warn)
	}
	fmt.Fprintf(ew, "%s: %d GPUs, %d CPUs (GPU-proportional %s), %s (GPU-proportional %s), predicted speed-up %.2f×\n",
		sp.Job, sp.GPUs, sp.CPUs, fnum(sp.FairCPUs), gbText(float64(sp.MemMiB)*slurm.MiB), gbText(sp.FairMemMiB*slurm.MiB), sp.Speedup)
	if id == 0 {
		_, err := fmt.Fprintln(w, slurm.QuoteArgv(sp.Argv))
		return err
	}
	_, err := fmt.Fprintln(w, id)
	return err
}

// slurmProfileFirst returns the cached profile of the job after --, or
// profiles it as a Slurm job first.
func slurmProfileFirst(ctx context.Context, c *cli.Command, partition string) (string, error) {
	pf := slurm.ProfileFirst{Synergy: c.String(slurmFlagBin), CacheDir: c.String(slurmFlagCache), Data: c.String(slurmFlagData),
		ProfileArgs: strings.Fields(c.String(slurmFlagPFlag)), Partition: partition}
	var err error
	if pf.Synergy == "" {
		if pf.Synergy, err = os.Executable(); err != nil {
			return "", badFlag(slurmFlagBin, err)
		}
	}
	if pf.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", badFlag(slurmFlagCache, err)
		}
		pf.CacheDir = filepath.Join(dir, "synergy", "slurm-profiles")
	}
	_, script, err := slurm.SplitSbatch(c.Args().Slice())
	if err != nil {
		return "", err
	}
	x := slurmExec(c)
	out, err := x.Run(ctx, "sinfo", "--json")
	if err != nil {
		return "", fmt.Errorf("read the nodes: %w", err)
	}
	nodes, err := slurm.ParseNodes(out)
	if err != nil {
		return "", err
	}
	ew := c.Root().ErrWriter
	fmt.Fprintf(ew, "profile-first: looking for a cached profile of %s in %s\n", slurm.QuoteArgv(script), pf.CacheDir)
	path, reused, err := pf.Ensure(ctx, x, nodes, script)
	if err != nil {
		return "", err
	}
	if reused {
		fmt.Fprintln(ew, "profile-first: reusing", path)
	} else {
		fmt.Fprintln(ew, "profile-first: profiled as a Slurm job, wrote", path)
	}
	return path, nil
}

// runSlurmRounds runs a round every --round until interrupted.
func runSlurmRounds(ctx context.Context, c *cli.Command, b *slurm.Bridge) error {
	every, grace := c.Duration(slurmFlagRound), c.Duration(slurmFlagGrace)
	switch {
	case every <= 0:
		return badFlag(slurmFlagRound, fmt.Errorf("%v: must be positive", every))
	case grace <= 0:
		return badFlag(slurmFlagGrace, fmt.Errorf("%v: must be positive", grace))
	}
	w, ew := c.Root().Writer, c.Root().ErrWriter
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var out any
		var line string
		var err error
		if c.Bool(slurmFlagDryRun) {
			var snap slurm.Snapshot
			if snap, err = slurm.ReadSnapshot(ctx, b.Cmd); err == nil {
				var plan slurm.RoundPlan
				plan, err = slurm.PlanRound(snap, b.Config, time.Now())
				out, line = plan, fmt.Sprintf("round (dry run): %d kept, %d to preempt, %d held-job actions", len(plan.Keep), len(plan.Moves), len(plan.Actions))
			}
		} else {
			var res *slurm.RoundResult
			if res, err = b.RunRound(ctx, grace, time.Now); err == nil {
				out, line = res, res.String()
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(ew, "%s slurm watch: round failed, retrying in %v: %v\n", time.Now().Format(time.TimeOnly), every, err)
		case c.Bool(slurmFlagJSON):
			if err := json.NewEncoder(w).Encode(out); err != nil {
				return err
			}
		default:
			fmt.Fprintf(w, "%s %s\n", time.Now().Format(time.TimeOnly), line)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runSlurmRuns prints each job's runs joined from Slurm's completion log.
func runSlurmRuns(_ context.Context, c *cli.Command) error {
	path := c.String(slurmFlagJobComp)
	if path == "" {
		return badFlag(slurmFlagJobComp, errors.New("required: the completion log (scontrol show config | grep JobCompLoc)"))
	}
	f, err := os.Open(path)
	if err != nil {
		return badFlag(slurmFlagJobComp, err)
	}
	defer f.Close()
	runs, err := slurm.ParseJobComp(f, time.Local)
	if err != nil {
		return badFlag(slurmFlagJobComp, err)
	}
	recs := slurm.JoinRuns(runs)
	w := c.Root().Writer
	if c.Bool(slurmFlagJSON) {
		return json.NewEncoder(w).Encode(map[string]any{"jobs": recs})
	}
	w = printable{w} // a job's name is its owner's to choose
	fmt.Fprintf(w, "%-8s %-24s %-10s %5s %11s %11s %9s\n", "job", "name", "state", "runs", "preemptions", "preempted_s", "jct_s")
	for _, r := range recs {
		fmt.Fprintf(w, "%-8d %-24.24s %-10s %5d %11d %11.0f %9.0f\n", r.JobID, r.Name, r.State, r.Runs, r.Preemptions, r.PreemptedS, r.JCTS)
	}
	return nil
}

// slurmRunsCommand is `synergy slurm runs`.
func slurmRunsCommand(jsonOut cli.Flag) *cli.Command {
	return &cli.Command{
		Name:  "runs",
		Usage: "per job, its arrival, runs, preemptions and JCT as Slurm's own completion log records them",
		Description: "Reads the log of JobCompType=jobcomp/filetxt (--jobcomp, the cluster's JobCompLoc): one line per run,\n" +
			"a requeue ending a run. Times are the controller's local time.",
		Flags: []cli.Flag{jsonOut,
			&cli.StringFlag{Name: slurmFlagJobComp, Usage: "the completion log (JobCompLoc)"},
		},
		Action: runSlurmRuns,
	}
}
