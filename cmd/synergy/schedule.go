package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Flag names of `synergy schedule`.
const (
	schedFlagCluster  = "cluster"
	schedFlagStrategy = "strategy"
	schedFlagJSON     = "json"
	schedFlagUsed     = "used"
)

func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:      "schedule",
		Usage:     "place a queue of jobs on a cluster's free resources and explain every decision",
		ArgsUsage: "JOB...",
		Description: "Each JOB is a profile JSON from `synergy profile` (PATH, or PATH:gpus=N to ask for N GPUs) or a model\n" +
			"of Synergy's zoo (zoo:NAME or zoo:NAME:gpus=N; " + strings.Join(zoo.Names(), ", ") + ").\n" +
			"Jobs are offered in the order given (drf and tetris re-order them, as in the simulator) to the\n" +
			"strategy, on all of the cluster's resources or on what --used leaves free. Printed: each placement with\n" +
			"the CPUs and memory given against the GPU-proportional share and the predicted speed-up, and why any\n" +
			"job is left waiting.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: schedFlagCluster, Value: "default", Usage: "cluster JSON file or preset (" + strings.Join(scheduler.PresetNames(), ", ") + ")"},
			&cli.StringFlag{Name: schedFlagStrategy, Value: "tune", Usage: "allocation strategy: " + strings.Join(scheduler.StrategyNames(), ", ")},
			&cli.BoolFlag{Name: schedFlagJSON, Usage: "print the placement as JSON instead of a table"},
			&cli.StringFlag{Name: schedFlagUsed, Usage: `JSON of resources already in use: {"servers": [{"server": "server-3", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000}]}`},
		},
		Action: runSchedule,
	}
}

// scheduleJob is one queued job and where it came from.
type scheduleJob struct {
	arg  string
	job  *scheduler.Job
	name string
}

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

// loadJobs turns the JOB arguments into jobs for a cluster of shape s;
// warnings say where a profile had to be clamped.
func loadJobs(args []string, s scheduler.Shape) ([]scheduleJob, []string, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("no jobs given: name profile JSON files or zoo:MODEL")
	}
	var out []scheduleJob
	var warnings []string
	for id, arg := range args {
		kind, name, gpus, err := parseJobArg(arg)
		if err != nil {
			return nil, nil, fmt.Errorf("job %d: %w", id, err)
		}
		var j *scheduler.Job
		switch kind {
		case "zoo":
			if gpus == 0 {
				gpus = 1
			}
			if j, err = scheduler.ZooJob(id, name, 0, 1, gpus, nil); err != nil {
				return nil, nil, fmt.Errorf("job %d %q: %w", id, arg, err)
			}
		default:
			p, err := sensitivity.LoadFilled(name) // as matrix reads it: holes predicted
			if err != nil {
				return nil, nil, fmt.Errorf("job %d: %w", id, err)
			}
			if j, err = scheduler.JobFromProfile(id, p, s); err != nil {
				return nil, nil, fmt.Errorf("job %d %s: %w", id, name, err)
			}
			if gpus > 0 {
				// The matrix is per GPU: asking for more GPUs scales the
				// demand, not the sensitivity.
				j.GPUs = gpus
			}
			for _, w := range j.Warnings {
				warnings = append(warnings, fmt.Sprintf("job %d (%s): %s", id, j.Model, w))
			}
		}
		if err := j.Validate(); err != nil {
			return nil, nil, fmt.Errorf("job %d %q: %w", id, arg, err)
		}
		out = append(out, scheduleJob{arg: arg, job: j, name: j.Model})
	}
	return out, warnings, nil
}

// usedFile is --used: resources held per server.
type usedFile struct {
	Servers []struct {
		Server   string  `json:"server"`
		GPUs     int     `json:"gpus"`
		CPUs     float64 `json:"cpus"`
		MemBytes float64 `json:"mem_bytes"`
	} `json:"servers"`
}

// reserveUsed marks --used's resources as taken on r.
func reserveUsed(r *scheduler.Round, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var u usedFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	c := r.Cluster()
	index := map[string]int{}
	for i, s := range c.Servers {
		index[s.Name] = i
	}
	for k, s := range u.Servers {
		i, ok := index[s.Server]
		if !ok {
			return fmt.Errorf("%s: servers[%d].server = %q: no such server in cluster %s", path, k, s.Server, c.Name)
		}
		if s.GPUs < 0 || s.CPUs < 0 || s.MemBytes < 0 {
			return fmt.Errorf("%s: servers[%d]: negative usage", path, k)
		}
		held := &scheduler.Job{ID: -1 - k, Model: "in use", GPUs: max(s.GPUs, 1)}
		a := scheduler.Allocation{JobID: held.ID, Servers: []scheduler.ServerAlloc{{Server: i, GPUs: s.GPUs, CPUs: s.CPUs, MemBytes: s.MemBytes}}, Speedup: 1}
		if err := r.Reserve(held, a); err != nil {
			return fmt.Errorf("%s: servers[%d]: %w", path, k, err)
		}
	}
	return nil
}

// schedulePlacement is one placed job in the output.
type schedulePlacement struct {
	Job      int                     `json:"job"`
	Name     string                  `json:"name"`
	Arg      string                  `json:"arg"`
	GPUs     int                     `json:"gpus"`
	Servers  []schedulePlacementPart `json:"servers"`
	CPUs     float64                 `json:"cpus"`
	MemBytes float64                 `json:"mem_bytes"`
	// FairCPUs and FairMemBytes are the GPU-proportional share of the
	// job's GPUs.
	FairCPUs     float64 `json:"fair_cpus"`
	FairMemBytes float64 `json:"fair_mem_bytes"`
	Speedup      float64 `json:"speedup"`
	Note         string  `json:"note"`
}

type schedulePlacementPart struct {
	Server   string  `json:"server"`
	GPUs     int     `json:"gpus"`
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
}

type scheduleWaiting struct {
	Job        int                   `json:"job"`
	Name       string                `json:"name"`
	Arg        string                `json:"arg"`
	GPUs       int                   `json:"gpus"`
	Reason     string                `json:"reason"`
	Shortfalls []scheduler.Shortfall `json:"shortfalls,omitempty"`
}

// scheduleResult is what `synergy schedule --json` prints.
type scheduleResult struct {
	Cluster    string              `json:"cluster"`
	Strategy   string              `json:"strategy"`
	FairShare  scheduler.PerGPU    `json:"fair_share_per_gpu"`
	Placements []schedulePlacement `json:"placements"`
	Waiting    []scheduleWaiting   `json:"waiting"`
	Warnings   []string            `json:"warnings"`
	// OptBound is Synergy-OPT's LP bound on total normalised throughput
	// (strategy opt only).
	OptBound *float64 `json:"opt_bound_throughput,omitempty"`
}

func runSchedule(ctx context.Context, c *cli.Command) error {
	flagErr := func(name string, err error) error { return fmt.Errorf("--%s: %w", name, err) }
	cluster, err := scheduler.LoadCluster(c.String(schedFlagCluster))
	if err != nil {
		return flagErr(schedFlagCluster, err)
	}
	strategy, err := scheduler.NewStrategy(c.String(schedFlagStrategy))
	if err != nil {
		return flagErr(schedFlagStrategy, err)
	}
	newRound := func() (*scheduler.Round, error) {
		r := scheduler.NewRound(&cluster)
		if path := c.String(schedFlagUsed); path != "" {
			if err := reserveUsed(r, path); err != nil {
				return nil, flagErr(schedFlagUsed, err)
			}
		}
		return r, nil
	}
	r, err := newRound()
	if err != nil {
		return err
	}
	var probe *scheduler.Round
	if _, ok := strategy.(scheduler.Opt); ok {
		probe, _ = newRound()
	}
	shape := r.Shape()
	queue, warnings, err := loadJobs(c.Args().Slice(), shape)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	res, err := schedule(r, probe, strategy, queue)
	if err != nil {
		return err
	}
	res.Warnings = append(warnings, res.Warnings...)
	if c.Bool(schedFlagJSON) {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("encode placement: %w", err)
		}
		_, err = os.Stdout.Write(append(b, '\n'))
		return err
	}
	return printSchedule(os.Stdout, res)
}

// schedule offers the queue (in order, as FIFO arrivals; DRF and Tetris
// re-order it) to the strategy on r. probe, when set, is a copy of r on
// which OPT's LP bound is computed.
func schedule(r, probe *scheduler.Round, s scheduler.Strategy, queue []scheduleJob) (*scheduleResult, error) {
	c := r.Cluster()
	shape := r.Shape()
	res := &scheduleResult{Cluster: c.Name, Strategy: s.Name(), FairShare: shape.Fair, Placements: []schedulePlacement{}, Waiting: []scheduleWaiting{}, Warnings: []string{}}
	var actives []*scheduler.Active
	byID := map[int]scheduleJob{}
	for k, q := range queue {
		q.job.ArrivalSeconds = float64(k)
		actives = append(actives, scheduler.NewActive(q.job, scheduler.IdealDemand(q.job, shape).Speedup))
		byID[q.job.ID] = q
		if q.job.GPUs > c.Totals().GPUs {
			res.Warnings = append(res.Warnings, fmt.Sprintf("job %d (%s) needs %d GPUs; the cluster has %d", q.job.ID, q.name, q.job.GPUs, c.Totals().GPUs))
		}
	}
	offer := scheduler.Offer(scheduler.FIFO{}, s, actives, c, scheduler.OrderContext{FreeGPUs: r.FreeGPUs(), FairRates: s.FairRates()})
	jobs := make([]*scheduler.Job, len(offer))
	for k, a := range offer {
		jobs[k] = a.Job
	}
	if probe != nil {
		if plan, err := scheduler.SolveOpt(probe, jobs); err == nil {
			res.OptBound = &plan.BoundThroughput
		}
	}
	decisions := scheduler.Schedule(r, s, jobs)
	// Final allocations: TUNE may have reverted earlier placements.
	final := map[int]scheduler.Allocation{}
	r.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) { final[j.ID] = *a })
	for _, d := range decisions {
		q := byID[d.JobID]
		if !d.Placed {
			res.Waiting = append(res.Waiting, scheduleWaiting{Job: d.JobID, Name: q.name, Arg: q.arg, GPUs: q.job.GPUs, Reason: d.Reason(), Shortfalls: d.Shortfalls})
			continue
		}
		a := final[d.JobID]
		fair := shape.Fair.Times(q.job.GPUs)
		p := schedulePlacement{Job: d.JobID, Name: q.name, Arg: q.arg, GPUs: q.job.GPUs, FairCPUs: fair.CPUs, FairMemBytes: fair.MemBytes, Speedup: a.Speedup, Note: d.Note}
		if a.Reverted {
			p.Note += "; later reverted to fair share to make room"
		}
		for _, sa := range a.Servers {
			p.Servers = append(p.Servers, schedulePlacementPart{Server: c.Servers[sa.Server].Name, GPUs: sa.GPUs, CPUs: sa.CPUs, MemBytes: sa.MemBytes})
			p.CPUs += sa.CPUs
			p.MemBytes += sa.MemBytes
		}
		res.Placements = append(res.Placements, p)
	}
	return res, nil
}

func printSchedule(w io.Writer, res *scheduleResult) error {
	fmt.Fprintf(w, "%s: strategy %s; GPU-proportional share %s CPUs and %s per GPU\n", res.Cluster, res.Strategy, fnum(res.FairShare.CPUs), gbText(res.FairShare.MemBytes))
	for _, warn := range res.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	if len(res.Placements) > 0 {
		t := newTable(w)
		t.Header([]string{"job", "name", "server(s)", "GPUs", "CPUs", "fair CPUs", "memory", "fair memory", "speed-up", "how"})
		for _, p := range res.Placements {
			var servers []string
			for _, s := range p.Servers {
				servers = append(servers, fmt.Sprintf("%s×%d", s.Server, s.GPUs))
			}
			row := []string{fmt.Sprint(p.Job), p.Name, strings.Join(servers, " "), fmt.Sprint(p.GPUs),
				fnum(p.CPUs), fnum(p.FairCPUs), gbText(p.MemBytes), gbText(p.FairMemBytes), fmt.Sprintf("%.2f×", p.Speedup), p.Note}
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
	return nil
}

func fnum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// gbText is decimal gigabytes, as Synergy's tables count memory.
func gbText(b float64) string { return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB" }
