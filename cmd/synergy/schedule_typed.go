package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
	"github.com/synergy-sched/synergy/scheduler/typed"
)

const schedFlagThroughputs = "throughputs"

// maxThroughputsBytes bounds a Gavel throughputs file (Gavel's own is
// about 100 KiB); a larger one is refused by its size.
const maxThroughputsBytes = 8 << 20

// placeTyped answers q on a cluster of several GPU types (scheduler/typed),
// with the Gavel throughputs file at thrPath ("" for none).
func placeTyped(q scheduler.Queue, types []typed.Type, thrPath, used string, args []string) (*scheduleResult, error) {
	var thr *gavel.Throughputs
	if thrPath != "" {
		var err error
		b, err := safefile.ReadFile(thrPath, maxThroughputsBytes, "throughputs")
		if err != nil {
			return nil, badFlag(schedFlagThroughputs, err)
		}
		if thr, err = gavel.ParseThroughputs(b); err != nil {
			return nil, badFlag(schedFlagThroughputs, fmt.Errorf("%s: %w", thrPath, err))
		}
		if err := typed.CheckThroughputs(thr, types); err != nil {
			return nil, badFlag(schedFlagThroughputs, fmt.Errorf("%s: %w", thrPath, err))
		}
	}
	plan, err := typed.Place(q, types, thr)
	if ue := (*scheduler.InUseError)(nil); errors.As(err, &ue) {
		return nil, badFlag(schedFlagUsed, fmt.Errorf("%s: %w", used, ue.Err))
	}
	if te := (*typed.ThroughputsError)(nil); errors.As(err, &te) {
		return nil, badFlag(schedFlagThroughputs, fmt.Errorf("%s: %w", thrPath, te.Err))
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	res := &scheduleResult{Cluster: plan.Cluster, Strategy: plan.Strategy, Policy: plan.Policy, FairShare: q.Cluster.FairShare(),
		Types: plan.Types, Placements: []schedulePlacement{}, Waiting: []scheduleWaiting{}, Warnings: plan.Warnings}
	for _, o := range plan.Jobs {
		c := o.Choice
		if !o.Placed {
			res.Waiting = append(res.Waiting, scheduleWaiting{Job: o.JobID, Name: o.Model, Arg: args[o.JobID], GPUs: o.GPUs,
				Reason: o.Reason, Shortfalls: o.Shortfalls, Choice: &c})
			continue
		}
		res.Placements = append(res.Placements, schedulePlacement{Job: o.JobID, Name: o.Model, Arg: args[o.JobID], GPUs: o.GPUs,
			Servers: o.Servers, CPUs: o.CPUs, MemBytes: o.MemBytes, FairCPUs: o.FairCPUs, FairMemBytes: o.FairMemBytes,
			Speedup: o.Speedup, Note: o.Note, Choice: &c})
	}
	return res, nil
}

// printTypes is the header line of a typed cluster: each type's GPUs and
// CPUs and memory per GPU.
func printTypes(w io.Writer, types []typed.Type) {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s (%d GPUs, %s CPUs and %s per GPU)", t.Name, t.GPUs, fnum(t.CPUsPerGPU), gbText(t.MemBytesPerGPU))
	}
	fmt.Fprintln(w, "GPU types:", strings.Join(parts, ", "))
}

// printTypeChoices says per job which type it got and why.
func printTypeChoices(w io.Writer, res *scheduleResult) {
	for _, p := range res.Placements {
		fmt.Fprintf(w, "type: job %d (%s) → %s\n", p.Job, p.Name, p.TypeReason)
	}
	for _, q := range res.Waiting {
		fmt.Fprintf(w, "type: job %d (%s) → %s\n", q.Job, q.Name, q.TypeReason)
	}
}
