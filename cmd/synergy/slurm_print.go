package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/slurm"
)

// slurmJobJSON is one job of a pass in `synergy slurm place --json`.
type slurmJobJSON struct {
	JobID    int     `json:"job_id"`
	Name     string  `json:"name"`
	Action   string  `json:"action"`
	Node     string  `json:"node,omitempty"`
	GPUs     int     `json:"gpus,omitempty"`
	CPUs     int     `json:"cpus,omitempty"`
	MemMiB   int64   `json:"mem_mib,omitempty"`
	FairCPUs float64 `json:"fair_cpus,omitempty"`
	// FairMemBytes is the GPU-proportional memory share.
	FairMemBytes float64 `json:"fair_mem_bytes,omitempty"`
	Speedup      float64 `json:"speedup,omitempty"`
	Reason       string  `json:"reason"`
	Error        string  `json:"error,omitempty"`
}

// slurmPassJSON is one pass in `synergy slurm place --json`.
type slurmPassJSON struct {
	Time      string            `json:"time"`
	DryRun    bool              `json:"dry_run,omitempty"`
	Cluster   scheduler.Cluster `json:"cluster"`
	Excluded  []string          `json:"excluded"`
	Used      []scheduler.Usage `json:"used"`
	Strategy  string            `json:"strategy,omitempty"`
	Policy    string            `json:"policy,omitempty"`
	FairShare *scheduler.PerGPU `json:"fair_share_per_gpu,omitempty"`
	Warnings  []string          `json:"warnings"`
	Jobs      []slurmJobJSON    `json:"jobs"`
}

func slurmPassOf(res *slurm.Result, dry bool) slurmPassJSON {
	p := res.Pass
	out := slurmPassJSON{Time: time.Now().UTC().Format(time.RFC3339), DryRun: dry, Cluster: p.Cluster,
		Excluded: append([]string{}, p.Excluded...), Used: append([]scheduler.Usage{}, p.Used...), Warnings: []string{}, Jobs: []slurmJobJSON{}}
	if p.Plan != nil {
		out.Strategy, out.Policy, out.Warnings = p.Plan.Strategy, p.Plan.Policy, append(out.Warnings, p.Plan.Warnings...)
		fs := p.Plan.FairShare
		out.FairShare = &fs
	}
	for _, a := range res.Applied {
		j := slurmJobJSON{JobID: a.Job.ID, Name: a.Job.Name, Action: string(a.Kind), Reason: a.Reason}
		if a.Placement != nil {
			j.Node, j.GPUs, j.CPUs, j.MemMiB = a.Placement.Node, a.Placement.GPUs, a.Placement.CPUs, a.Placement.MemMiB
		}
		if o := a.Outcome; o != nil {
			j.FairCPUs, j.FairMemBytes, j.Speedup = o.FairCPUs, o.FairMemBytes, o.Speedup
		}
		if a.Err != nil {
			j.Error = a.Err.Error()
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out
}

// printSlurmPass prints a pass as a table (or one JSON object).
func printSlurmPass(w io.Writer, res *slurm.Result, asJSON, dry bool) error {
	v := slurmPassOf(res, dry)
	if asJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	head := fmt.Sprintf("%s: %d GPU nodes", v.Cluster.Name, len(v.Cluster.Servers))
	if v.FairShare != nil {
		head += fmt.Sprintf("; strategy %s, policy %s; GPU-proportional share %s CPUs and %s per GPU",
			v.Strategy, v.Policy, fnum(v.FairShare.CPUs), gbText(v.FairShare.MemBytes))
	}
	if dry {
		head += " (dry run: nothing changed)"
	}
	fmt.Fprintln(w, head)
	for _, e := range v.Excluded {
		fmt.Fprintln(w, "excluded:", e)
	}
	for _, warn := range v.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	if len(v.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "no held job to place")
		return err
	}
	t := newTable(w)
	t.Header([]string{"job", "name", "action", "node", "GPUs", "CPUs", "fair CPUs", "memory", "fair memory", "speed-up", "reason"})
	for _, j := range v.Jobs {
		row := []string{strconv.Itoa(j.JobID), j.Name, j.Action, "", "", "", "", "", "", "", j.Reason}
		if j.Node != "" {
			row[3], row[4], row[5], row[7] = j.Node, strconv.Itoa(j.GPUs), strconv.Itoa(j.CPUs), gbText(float64(j.MemMiB)*slurm.MiB)
		}
		if j.FairCPUs > 0 {
			row[6], row[8] = fnum(j.FairCPUs), gbText(j.FairMemBytes)
		}
		if j.Speedup > 0 {
			row[9] = fmt.Sprintf("%.2f×", j.Speedup)
		}
		if j.Error != "" {
			row[10] = "FAILED: " + j.Error
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
