// Package typed places a queue on a cluster whose servers carry more than
// one GPU type (Server.GPUType): it picks each job's type as Gavel's
// fifo_perf greedy does — in queue order, the type with the highest
// throughput for the job among the types with enough free GPUs — and then
// places the job on that type's servers with scheduler.PlaceQueue and the
// queue's strategy. Every job's outcome says which type it got and why.
//
// A job's throughput on a type comes, in order of preference, from a Gavel
// throughputs file (the job's model name at its GPU count, else at scale
// factor 1), from the job's sensitivity matrix read at the CPUs and memory
// per GPU of the type's servers (scheduler/joint's T[m][j] with every GPU
// type equally fast: the file is the only source of GPU speed), or equal on
// every type. See docs/gavel.md, "synergy schedule on typed clusters".
package typed

import (
	"fmt"
	"math"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
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

// Rates is a job's throughput on each type (in Types' order) and where it
// came from.
type Rates struct {
	Values []float64
	Source string
}

// JobRates returns j's rates on types: from thr when it holds j's model
// (at j's GPU count, else at scale factor 1), else from j's matrix at each
// type's CPUs and memory per GPU, else equal. thr may be nil. An error
// names the throughputs key a type lacks.
func JobRates(j *scheduler.Job, types []Type, thr *gavel.Throughputs) (Rates, error) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.Name
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
			return Rates{Values: row, Source: SourceThroughputs}, nil
		}
	}
	r := Rates{Values: make([]float64, len(types)), Source: SourceEqual}
	if j.Matrix == nil {
		for i := range r.Values {
			r.Values[i] = 1
		}
		return r, nil
	}
	// joint's T[m][j] with speed 1: the rate at the type's GPU-proportional
	// CPUs and memory, capped at the job's ideal.
	ideal, _ := j.Matrix.At(j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU)
	for i, t := range types {
		v, _ := j.Matrix.At(t.CPUsPerGPU, t.MemBytesPerGPU)
		r.Values[i] = math.Min(v, ideal)
	}
	r.Source = SourceProfile
	return r, nil
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
