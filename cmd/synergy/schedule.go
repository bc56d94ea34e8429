package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/typed"
	"github.com/synergy-sched/synergy/sensitivity"
)

func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:      "schedule",
		Usage:     "place a queue of jobs on a cluster's free resources and explain every decision",
		ArgsUsage: "JOB...",
		Description: "Each JOB is a profile JSON from `synergy profile` (PATH, or PATH:gpus=N to ask for N GPUs) or a model\n" +
			"of Synergy's zoo (zoo:NAME or zoo:NAME:gpus=N; " + strings.Join(zoo.Names(), ", ") + ").\n" +
			"Jobs are offered in --policy's order (fifo: as given; drf and tetris then re-order them, as in the\n" +
			"simulator) to the strategy, on all of the cluster's resources or on what --used leaves free. Printed:\n" +
			"each placement with the CPUs and memory given against the GPU-proportional share and the predicted\n" +
			"speed-up, and why any job is left waiting.\n\n" +
			"On a cluster whose servers name two or more gpu_types, each job first gets a GPU type (in queue\n" +
			"order, the type with its highest throughput among those with enough free GPUs: throughputs from\n" +
			"--throughputs where the file has the job's model, else from its profile at each type's CPUs and\n" +
			"memory per GPU) and is then placed on that type's servers; the output says which type and why.\n\n" +
			namedHelp("Strategies", scheduler.StrategyHelp()) + "\n" + namedHelp("Policies", scheduler.PolicyHelp()),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: schedFlagCluster, Value: "default", Usage: "cluster JSON file or preset (" + strings.Join(scheduler.PresetNames(), ", ") + ")"},
			&cli.StringFlag{Name: schedFlagStrategy, Value: "tune", Usage: "allocation strategy: " + strings.Join(scheduler.StrategyNames(), ", ")},
			&cli.StringFlag{Name: schedFlagPolicy, Value: "fifo", Usage: "job-ordering policy: " + strings.Join(scheduler.PolicyNames(), ", ")},
			&cli.BoolFlag{Name: schedFlagJSON, Usage: "print the placement as JSON instead of a table"},
			&cli.StringFlag{Name: schedFlagThroughputs, Usage: "Gavel throughputs JSON (per gpu_type, per ('<model>', <GPUs>)): the jobs' speed per GPU type on a typed cluster"},
			&cli.StringFlag{Name: schedFlagUsed, Usage: `JSON of resources already in use: {"servers": [{"server": "server-3", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000}]}`},
		},
		Action: runSchedule,
	}
}

// Flag names of `synergy schedule`.
const (
	schedFlagCluster  = "cluster"
	schedFlagStrategy = "strategy"
	schedFlagJSON     = "json"
	schedFlagUsed     = "used"
	schedFlagPolicy   = "policy"
)

// parseJobArg splits "PATH[:gpus=N]" or "zoo:NAME[:gpus=N]".
func parseJobArg(arg string) (source, name string, gpus int, err error) {
	rest := arg
	if i := strings.LastIndex(rest, ":gpus="); i >= 0 {
		n, perr := strconv.Atoi(rest[i+len(":gpus="):])
		if perr != nil || n < 1 {
			return "", "", 0, fmt.Errorf("%q: gpus=%s is not a positive integer", arg, rest[i+len(":gpus="):])
		}
		gpus, rest = n, rest[:i]
	}
	if name, ok := strings.CutPrefix(rest, "zoo:"); ok {
		if name == "" {
			return "", "", 0, fmt.Errorf("%q: zoo: needs a model name (%s)", arg, strings.Join(zoo.Names(), ", "))
		}
		return "zoo", name, gpus, nil
	}
	if rest == "" {
		return "", "", 0, fmt.Errorf("%q: no profile path", arg)
	}
	return "profile", rest, gpus, nil
}

// loadJobs turns the JOB arguments into jobs (ID = the argument's index)
// for a cluster of shape s.
func loadJobs(args []string, s scheduler.Shape) ([]*scheduler.Job, error) {
	if len(args) == 0 {
		return nil, errors.New("no jobs given: name profile JSON files or zoo:MODEL")
	}
	var out []*scheduler.Job
	for id, arg := range args {
		kind, name, gpus, err := parseJobArg(arg)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", id, err)
		}
		var j *scheduler.Job
		switch kind {
		case "zoo":
			if j, err = scheduler.ZooJob(id, name, 0, 1, max(gpus, 1), nil); err != nil {
				return nil, fmt.Errorf("job %d %q: %w", id, arg, err)
			}
		default:
			p, err := sensitivity.LoadFilled(name) // as matrix reads it: holes predicted
			if err != nil {
				return nil, fmt.Errorf("job %d: %w", id, err)
			}
			if j, err = scheduler.JobFromProfile(id, p, s); err != nil {
				return nil, fmt.Errorf("job %d %s: %w", id, name, err)
			}
			if gpus > 0 {
				// The matrix is per GPU: asking for more GPUs scales the
				// demand, not the sensitivity.
				j.GPUs = gpus
			}
		}
		if err := j.Validate(); err != nil {
			return nil, fmt.Errorf("job %d %q: %w", id, arg, err)
		}
		out = append(out, j)
	}
	return out, nil
}

// schedulePlacement is one placed job in the output.
type schedulePlacement struct {
	Job      int                     `json:"job"`
	Name     string                  `json:"name"`
	Arg      string                  `json:"arg"`
	GPUs     int                     `json:"gpus"`
	Servers  []scheduler.ServerShare `json:"servers"`
	CPUs     float64                 `json:"cpus"`
	MemBytes float64                 `json:"mem_bytes"`
	// FairCPUs and FairMemBytes are the GPU-proportional share of the
	// job's GPUs.
	FairCPUs     float64 `json:"fair_cpus"`
	FairMemBytes float64 `json:"fair_mem_bytes"`
	Speedup      float64 `json:"speedup"`
	Note         string  `json:"note"`
	// Ideal is the job's ideal allocation per GPU and why (jobIdeal).
	Ideal string `json:"ideal"`
	// Choice is the GPU type the job got and why (typed clusters only).
	*typed.Choice
}

type scheduleWaiting struct {
	Job        int                   `json:"job"`
	Name       string                `json:"name"`
	Arg        string                `json:"arg"`
	GPUs       int                   `json:"gpus"`
	Reason     string                `json:"reason"`
	Shortfalls []scheduler.Shortfall `json:"shortfalls,omitempty"`
	// Ideal is the job's ideal allocation per GPU and why (jobIdeal).
	Ideal string `json:"ideal"`
	// Choice says why no GPU type took the job (typed clusters only).
	*typed.Choice
}

// scheduleResult is what `synergy schedule --json` prints.
type scheduleResult struct {
	Cluster   string           `json:"cluster"`
	Strategy  string           `json:"strategy"`
	Policy    string           `json:"policy"`
	FairShare scheduler.PerGPU `json:"fair_share_per_gpu"`
	// Types are the cluster's GPU types when it has several.
	Types      []typed.Type        `json:"types,omitempty"`
	Placements []schedulePlacement `json:"placements"`
	Waiting    []scheduleWaiting   `json:"waiting"`
	Warnings   []string            `json:"warnings"`
	// OptBound is Synergy-OPT's LP bound on total normalised throughput
	// (strategy opt only).
	OptBound *float64 `json:"opt_bound_throughput,omitempty"`
}

func runSchedule(ctx context.Context, c *cli.Command) error {
	cluster, err := scheduler.LoadCluster(c.String(schedFlagCluster))
	if err != nil {
		return badFlag(schedFlagCluster, err)
	}
	q := scheduler.Queue{Cluster: &cluster}
	if q.Strategy, err = scheduler.NewStrategy(c.String(schedFlagStrategy)); err != nil {
		return badFlag(schedFlagStrategy, err)
	}
	if q.Policy, err = scheduler.NewPolicy(c.String(schedFlagPolicy)); err != nil {
		return badFlag(schedFlagPolicy, err)
	}
	used := c.String(schedFlagUsed)
	if used != "" {
		if q.InUse, err = scheduler.LoadUsage(used); err != nil {
			return badFlag(schedFlagUsed, err)
		}
	}
	args := c.Args().Slice()
	if q.Jobs, err = loadJobs(args, scheduler.ShapeOf(&cluster)); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	res, err := placeSchedule(q, c.String(schedFlagThroughputs), used, args)
	if err != nil {
		return err
	}
	attachIdeals(res, q.Jobs)
	w := c.Root().Writer
	if c.Bool(schedFlagJSON) {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("encode placement: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	return printSchedule(w, res)
}

// placeSchedule answers q: by GPU type on a typed cluster, else as one
// PlaceQueue.
func placeSchedule(q scheduler.Queue, thrPath, used string, args []string) (*scheduleResult, error) {
	types, err := typed.Types(q.Cluster)
	if err != nil {
		return nil, badFlag(schedFlagCluster, err)
	}
	if types != nil {
		return placeTyped(q, types, thrPath, used, args)
	}
	if thrPath != "" {
		return nil, badFlag(schedFlagThroughputs, fmt.Errorf("cluster %s has no two GPU types (servers' gpu_type): nothing to choose between", q.Cluster.Name))
	}
	plan, err := scheduler.PlaceQueue(q)
	if ue := (*scheduler.InUseError)(nil); errors.As(err, &ue) {
		return nil, badFlag(schedFlagUsed, fmt.Errorf("%s: %w", used, ue.Err))
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return scheduleResultOf(plan, args), nil
}

// scheduleResultOf splits a plan into placed and waiting jobs, each with
// its JOB argument (job IDs are argument indices).
func scheduleResultOf(plan *scheduler.QueuePlan, args []string) *scheduleResult {
	res := &scheduleResult{Cluster: plan.Cluster, Strategy: plan.Strategy, Policy: plan.Policy, FairShare: plan.FairShare,
		Placements: []schedulePlacement{}, Waiting: []scheduleWaiting{}, Warnings: plan.Warnings, OptBound: plan.OptBound}
	for _, o := range plan.Jobs {
		if !o.Placed {
			res.Waiting = append(res.Waiting, scheduleWaiting{Job: o.JobID, Name: o.Model, Arg: args[o.JobID], GPUs: o.GPUs, Reason: o.Reason, Shortfalls: o.Shortfalls})
			continue
		}
		res.Placements = append(res.Placements, schedulePlacement{Job: o.JobID, Name: o.Model, Arg: args[o.JobID], GPUs: o.GPUs,
			Servers: o.Servers, CPUs: o.CPUs, MemBytes: o.MemBytes, FairCPUs: o.FairCPUs, FairMemBytes: o.FairMemBytes, Speedup: o.Speedup, Note: o.Note})
	}
	return res
}

func printSchedule(w io.Writer, res *scheduleResult) error {
	how := "strategy " + res.Strategy
	if res.Policy != (scheduler.FIFO{}).Name() {
		how += ", policy " + res.Policy
	}
	if res.Types != nil {
		fmt.Fprintf(w, "%s: %s\n", res.Cluster, how)
		printTypes(w, res.Types)
	} else {
		fmt.Fprintf(w, "%s: %s; GPU-proportional share %s CPUs and %s per GPU\n", res.Cluster, how, fnum(res.FairShare.CPUs), gbText(res.FairShare.MemBytes))
	}
	for _, warn := range res.Warnings {
		fmt.Fprintln(printable{w}, "warning:", warn)
	}
	if len(res.Placements) > 0 {
		t := newTable(w)
		header := []string{"job", "name", "server(s)", "GPUs", "CPUs", "fair CPUs", "memory", "fair memory", "speed-up", "how"}
		if res.Types != nil {
			header = append(header[:3], append([]string{"GPU type"}, header[3:]...)...)
		}
		t.Header(header)
		for _, p := range res.Placements {
			var servers []string
			for _, s := range p.Servers {
				servers = append(servers, fmt.Sprintf("%s×%d", s.Server, s.GPUs))
			}
			row := []string{fmt.Sprint(p.Job), p.Name, strings.Join(servers, " "), fmt.Sprint(p.GPUs),
				fnum(p.CPUs), fnum(p.FairCPUs), gbText(p.MemBytes), gbText(p.FairMemBytes), fmt.Sprintf("%.2f×", p.Speedup), p.Note}
			if p.Choice != nil {
				row = append(row[:3], append([]string{p.Type}, row[3:]...)...)
			}
			if err := t.Append(row); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "no job placed")
	}
	printIdeals(w, res)
	if res.OptBound != nil {
		total := 0.0
		for _, p := range res.Placements {
			total += p.Speedup
		}
		fmt.Fprintf(w, "opt: LP upper bound %.2f on total normalised throughput; placed %.2f\n", *res.OptBound, total)
	}
	for _, q := range res.Waiting {
		fmt.Fprintf(w, "waiting: job %d (%s, %d GPUs): %s\n", q.Job, q.Name, q.GPUs, q.Reason)
	}
	if res.Types != nil {
		printTypeChoices(w, res)
	}
	return nil
}

// jobIdeal says what a job's ideal allocation per GPU is and why: for a
// profile, the demand rule's own words (sensitivity.AtFairShare, through
// scheduler.JobFromProfile); a zoo model's ideal is its table's.
func jobIdeal(j *scheduler.Job) string {
	if j.IdealWhy != "" {
		return j.IdealWhy
	}
	return fmt.Sprintf("%s CPUs, %s: the model zoo's table (no noise to read through), %.2f× the share", fnum(j.IdealCPUsPerGPU), gbText(j.IdealMemBytesPerGPU), j.Speedup)
}

// attachIdeals gives each placed and waiting job of res its ideal (job IDs
// are indices into jobs).
func attachIdeals(res *scheduleResult, jobs []*scheduler.Job) {
	byID := make(map[int]*scheduler.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for i := range res.Placements {
		if j := byID[res.Placements[i].Job]; j != nil {
			res.Placements[i].Ideal = jobIdeal(j)
		}
	}
	for i := range res.Waiting {
		if j := byID[res.Waiting[i].Job]; j != nil {
			res.Waiting[i].Ideal = jobIdeal(j)
		}
	}
}

// printIdeals says, under the table, each job's ideal per GPU and why.
func printIdeals(w io.Writer, res *scheduleResult) {
	for _, p := range res.Placements {
		fmt.Fprintf(printable{w}, "ideal per GPU: job %d (%s): %s\n", p.Job, p.Name, p.Ideal)
	}
	for _, q := range res.Waiting {
		fmt.Fprintf(printable{w}, "ideal per GPU: job %d (%s): %s\n", q.Job, q.Name, q.Ideal)
	}
}

// badFlag says which flag err is about.
func badFlag(name string, err error) error { return fmt.Errorf("--%s: %w", name, err) }

// namedHelp lists a registry's help lines under a title, indented.
func namedHelp(title, lines string) string {
	return title + ":\n  " + strings.ReplaceAll(strings.TrimSuffix(lines, "\n"), "\n", "\n  ")
}

func fnum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// gbText is decimal gigabytes, as Synergy's tables count memory.
func gbText(b float64) string { return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB" }
