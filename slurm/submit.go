package slurm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// SubmitRequest is one `synergy slurm submit`.
type SubmitRequest struct {
	// Profile is the job's profile; it is named in the job's comment as
	// an absolute path (the bridge reads it on the same file system).
	Profile string
	// GPUs is the GPUs to ask for; 0 takes the profile's.
	GPUs int
	// Partition, when set, is passed to sbatch and limits the node shape
	// to its nodes.
	Partition string
	// Hold submits the job held, for `synergy slurm place` to place.
	Hold bool
	// Sbatch is the rest of sbatch's command line: options, the script
	// and its arguments.
	Sbatch []string
	// LoadProfile reads the profile; nil is sensitivity.LoadFilled.
	LoadProfile func(path string) (*sensitivity.Profile, error)
}

// SubmitPlan is what submit asks for and why.
type SubmitPlan struct {
	Cluster scheduler.Cluster
	Job     string
	GPUs    int
	CPUs    int
	MemMiB  int64
	// FairCPUs and FairMemMiB are the GPU-proportional share of the GPUs,
	// for comparison; Speedup the profile's predicted speed-up at the
	// demand over that share.
	FairCPUs   float64
	FairMemMiB float64
	Speedup    float64
	Warnings   []string
	Argv       []string
}

// PlanSubmit works out the sbatch command line for req on the nodes: the
// profile's ideal demand (scheduler.IdealDemand of scheduler.JobFromProfile
// on the cluster's shape, the allocation the bridge gives the job when it
// fits) for the GPUs asked, on one node, with the profile named in the
// comment.
func PlanSubmit(nodes []Node, req SubmitRequest) (*SubmitPlan, error) {
	if req.Profile == "" {
		return nil, errors.New("no profile")
	}
	if len(req.Sbatch) == 0 {
		return nil, errors.New("no batch script: give sbatch's options and the script after --")
	}
	if req.GPUs < 0 {
		return nil, fmt.Errorf("gpus = %d: must not be negative", req.GPUs)
	}
	abs, err := filepath.Abs(req.Profile)
	if err != nil {
		return nil, err
	}
	if strings.Contains(abs, " "+markPrefix) {
		return nil, fmt.Errorf("profile path %q: must not contain %q", abs, " "+markPrefix)
	}
	load := req.LoadProfile
	if load == nil {
		load = sensitivity.LoadFilled
	}
	c, excluded := clusterOf(Config{Partition: req.Partition}, nodes)
	if len(c.Servers) == 0 {
		where := "the cluster"
		if req.Partition != "" {
			where = "partition " + req.Partition
		}
		return nil, fmt.Errorf("%s has no node with GPUs to size the job for (%s)", where, strings.Join(excluded, "; "))
	}
	p, err := load(abs)
	if err != nil {
		return nil, err
	}
	shape := scheduler.ShapeOf(&c)
	j, err := scheduler.JobFromProfile(0, p, shape)
	if err != nil {
		return nil, err
	}
	if req.GPUs > 0 {
		j.GPUs = req.GPUs
	}
	if j.GPUs > shape.PerServer.GPUs {
		return nil, fmt.Errorf("%d GPUs: the nodes have %d; submit sizes single-node jobs", j.GPUs, shape.PerServer.GPUs)
	}
	d := scheduler.IdealDemand(j, shape)
	fair := shape.Fair.Times(j.GPUs)
	sp := &SubmitPlan{Cluster: c, Job: j.Model, GPUs: j.GPUs, CPUs: max(int(math.Ceil(d.Ideal.CPUs-1e-9)), 1),
		MemMiB: max(int64(math.Ceil(d.Ideal.MemBytes/MiB-1e-9)), 1), FairCPUs: fair.CPUs, FairMemMiB: fair.MemBytes / MiB,
		Speedup: d.Speedup, Warnings: j.Warnings}
	sp.Argv = []string{"sbatch", "--parsable", "--nodes=1", "--ntasks=1",
		"--gres=gpu:" + strconv.Itoa(sp.GPUs), "--cpus-per-task=" + strconv.Itoa(sp.CPUs),
		"--mem=" + strconv.FormatInt(sp.MemMiB, 10), "--comment=" + (Mark{Profile: abs}).String()}
	if req.Partition != "" {
		sp.Argv = append(sp.Argv, "--partition="+req.Partition)
	}
	if req.Hold {
		sp.Argv = append(sp.Argv, "--hold")
	}
	sp.Argv = append(sp.Argv, req.Sbatch...)
	return sp, nil
}

// Submit reads the nodes, plans req and runs sbatch; it returns the job
// ID.
func Submit(ctx context.Context, cmd Commander, req SubmitRequest) (int, *SubmitPlan, error) {
	out, err := cmd.Run(ctx, "sinfo", "--json")
	if err != nil {
		return 0, nil, wrapRead("read the nodes (sinfo --json)", err)
	}
	nodes, err := ParseNodes(out)
	if err != nil {
		return 0, nil, err
	}
	sp, err := PlanSubmit(nodes, req)
	if err != nil {
		return 0, nil, err
	}
	out, err = cmd.Run(ctx, sp.Argv...)
	if err != nil {
		return 0, sp, fmt.Errorf("submit: %w", err)
	}
	id, err := ParseJobID(string(out))
	return id, sp, err
}

// ParseJobID reads sbatch --parsable's answer ("ID" or "ID;CLUSTER").
func ParseJobID(out string) (int, error) {
	s, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	id, err := strconv.Atoi(s)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("sbatch --parsable printed %q, not a job ID", strings.TrimSpace(out))
	}
	return id, nil
}
