// Package typed places a queue on a cluster whose servers carry more than
// one GPU type (Server.GPUType) with the joint policy's rule
// (scheduler/joint): each job, in queue order, gets the GPU type, CPUs and
// memory together — on every type with enough free GPUs it is placed
// tentatively with the queue's strategy (scheduler.PlaceQueue on that type's
// servers, after the jobs already given the type), its rate there is its GPU
// rate × joint.Factor at the CPUs and memory per GPU it got, and the type
// with the highest rate wins. Every job's outcome says which type, CPUs and
// memory it got and why: its rate on each type at what it would hold there.
//
// A job's GPU rate on a type comes from a Gavel throughputs file (the job's
// model name at its GPU count, else at scale factor 1; taken as its rate at
// its ideal CPUs and memory), else it is equal on every type; its matrix
// (a profile's, or a zoo model's) gives the factor, 1 without one. See
// docs/joint.md, "synergy schedule".
package typed

import (
	"fmt"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
	"github.com/synergy-sched/synergy/scheduler/joint"
)

// Rate sources, as Choice.Source names them.
const (
	SourceThroughputs = "throughputs"
	SourceProfile     = "profile"
	SourceEqual       = "equal"
)

// Type is one GPU type of the cluster: its servers, GPUs, and CPUs and
// memory per GPU (its servers' totals divided by their GPUs).
type Type struct {
	Name           string  `json:"name"`
	Servers        int     `json:"servers"`
	GPUs           int     `json:"gpus"`
	CPUsPerGPU     float64 `json:"cpus_per_gpu"`
	MemBytesPerGPU float64 `json:"mem_bytes_per_gpu"`
	cluster        scheduler.Cluster
}

// Types lists c's GPU types in order of first appearance, or nil when c
// has fewer than two (an untyped cluster, scheduled as before). A cluster
// that types some servers but not all is an error naming the first
// untyped server.
func Types(c *scheduler.Cluster) ([]Type, error) {
	var out []Type
	idx := map[string]int{}
	for _, s := range c.Servers {
		if s.GPUType == "" {
			continue
		}
		k, ok := idx[s.GPUType]
		if !ok {
			k = len(out)
			idx[s.GPUType] = k
			out = append(out, Type{Name: s.GPUType, cluster: scheduler.Cluster{Name: c.Name + "/" + s.GPUType}})
		}
		t := &out[k]
		t.Servers++
		t.GPUs += s.GPUs
		t.CPUsPerGPU += s.CPUs
		t.MemBytesPerGPU += float64(s.MemBytes)
		t.cluster.Servers = append(t.cluster.Servers, s)
	}
	if len(out) < 2 {
		return nil, nil
	}
	for i, s := range c.Servers {
		if s.GPUType == "" {
			return nil, fmt.Errorf("cluster %q: servers[%d] (%s) has no gpu_type, but other servers name %d types: type every server or none", c.Name, i, s.Name, len(out))
		}
	}
	for i := range out {
		out[i].CPUsPerGPU /= float64(out[i].GPUs)
		out[i].MemBytesPerGPU /= float64(out[i].GPUs)
	}
	return out, nil
}

// Rates is a job's throughput on each type (in Types' order), where it
// came from, and the CPUs and memory per GPU it was read at.
type Rates struct {
	Values []float64
	Source string
	// Grants are the CPUs and memory per GPU each value was read at: what
	// the strategy gave the job on the type, or the type's share where the
	// type had no room.
	Grants []scheduler.PerGPU
}

// baseRates returns j's GPU rate on types: from thr when it holds j's
// model (at j's GPU count, else at scale factor 1), else 1 on every type.
// thr may be nil. An error names the throughputs key a type lacks.
func baseRates(j *scheduler.Job, types []Type, thr *gavel.Throughputs) (Rates, error) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.Name
	}
	src := SourceEqual
	if j.Matrix != nil {
		src = SourceProfile
	}
	if thr != nil {
		for _, key := range []gavel.JobType{{Model: j.Model, ScaleFactor: j.GPUs}, {Model: j.Model, ScaleFactor: 1}} {
			if !hasKey(thr, key) {
				continue
			}
			row, err := thr.Row(key, names)
			if err != nil {
				return Rates{}, fmt.Errorf("job %d (%s): %w", j.ID, j.Model, err)
			}
			return Rates{Values: row, Source: SourceThroughputs, Grants: make([]scheduler.PerGPU, len(types))}, nil
		}
	}
	r := Rates{Values: make([]float64, len(types)), Source: src, Grants: make([]scheduler.PerGPU, len(types))}
	for i := range r.Values {
		r.Values[i] = 1
	}
	return r, nil
}

// at scales r's value on type i by j's joint.Factor at g per GPU and
// records g.
func (r *Rates) at(i int, j *scheduler.Job, g scheduler.PerGPU) {
	r.Grants[i] = g
	r.Values[i] *= joint.Factor(j, g.CPUs, g.MemBytes)
}

// hasKey says whether any worker type of thr has key.
func hasKey(thr *gavel.Throughputs, key gavel.JobType) bool {
	for _, iso := range thr.Isolated {
		if _, ok := iso[key]; ok {
			return true
		}
	}
	return false
}

// CheckThroughputs refuses a throughputs file that lacks one of the
// cluster's types, naming it.
func CheckThroughputs(thr *gavel.Throughputs, types []Type) error {
	for _, t := range types {
		if _, ok := thr.Isolated[t.Name]; !ok {
			return fmt.Errorf("throughputs have no worker type %q of the cluster (they have %s)", t.Name, strings.Join(thr.WorkerTypes(), ", "))
		}
	}
	return nil
}
