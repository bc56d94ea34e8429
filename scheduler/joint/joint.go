package joint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
)

// Names of what this package adds to a typed simulation.
const (
	// Policy is the joint policy's name in --policies.
	Policy = "joint"
	// Fair and Tune are Synergy's strategies that run on a typed cluster:
	// the GPU-proportional share, and TUNE (ideal CPUs and memory where the
	// server holds them, never less than min(ideal, share)).
	Fair = "fair"
	Tune = "tune"
	// SynergyFIFO is the policy Synergy's strategies run under there.
	SynergyFIFO = "fifo"
)

// StrategyNames lists the strategies a typed simulation runs.
func StrategyNames() []string { return []string{Fair, Tune} }

// Type is one GPU type as the placement sees it: its GPUs per server and
// the CPUs and memory its servers carry per GPU.
type Type struct {
	Name           string
	GPUsPerServer  int
	CPUsPerGPU     float64
	MemBytesPerGPU float64
}

// Cluster is a typed cluster's types, in the spec's order (the order in
// which Synergy's first fit meets their servers).
type Cluster []Type

// NewCluster is spec's types with each type's share per GPU.
func NewCluster(spec gavel.ClusterSpec, share gavel.Share) Cluster {
	c := make(Cluster, len(spec.Types))
	for i, t := range spec.Types {
		cpus, mem := share(t)
		c[i] = Type{Name: t, GPUsPerServer: spec.GPUsPerServer[i], CPUsPerGPU: cpus, MemBytesPerGPU: mem}
	}
	return c
}

func (c Cluster) byName(name string) (Type, bool) {
	for _, t := range c {
		if t.Name == name {
			return t, true
		}
	}
	return Type{}, false
}

// Sensitivities maps a Gavel job type ("ResNet-50 (batch size 64)") or its
// model ("ResNet-50") to a job whose matrix and ideal per-GPU CPUs and
// memory are that job type's sensitivity (a zoo model or a profile). Job
// types it lacks are taken as insensitive: they run at the file's rate
// whatever they hold.
type Sensitivities map[string]*scheduler.Job

// Of is the sensitivity of jobType: by its full name, else by its model
// (the name without " (batch size N)"); nil when neither is known.
func (s Sensitivities) Of(jobType string) *scheduler.Job {
	if j, ok := s[jobType]; ok {
		return j
	}
	if model, _, ok := strings.Cut(jobType, " (batch size "); ok {
		return s[model]
	}
	return nil
}

// Unused lists, sorted, the names of s that name none of jobTypes (by
// full name or by model, as Of reads them): a key with a typo would
// otherwise leave its job type insensitive without a word.
func (s Sensitivities) Unused(jobTypes []string) []string {
	used := map[string]bool{}
	for _, jt := range jobTypes {
		used[jt] = true
		if model, _, ok := strings.Cut(jt, " (batch size "); ok {
			used[model] = true
		}
	}
	var out []string
	for name := range s {
		if !used[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Check refuses a sensitivity without a usable matrix, naming it.
func (s Sensitivities) Check() error {
	for name, j := range s {
		if j == nil || j.Matrix == nil {
			return fmt.Errorf("sensitivity of %q: no matrix", name)
		}
		if v, _ := j.Matrix.At(j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU); !(v > 0) {
			return fmt.Errorf("sensitivity of %q (%s): throughput %v at its ideal allocation", name, j.Model, v)
		}
	}
	return nil
}

// Factor is j's throughput with cpus and memBytes per GPU as a fraction
// of its throughput at its ideal per-GPU allocation: S(cpus, mem) /
// S(ideal), capped at 1, where S is j's matrix (bilinear between grid
// points, clamped at its edges). Range (0, 1]; 1 for a nil j (no
// sensitivity known). Source: docs/joint.md, "Throughput".
func Factor(j *scheduler.Job, cpus, memBytes float64) float64 {
	if j == nil || j.Matrix == nil {
		return 1
	}
	ideal, _ := j.Matrix.At(j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU)
	v, _ := j.Matrix.At(cpus, memBytes)
	if !(ideal > 0) {
		return 1
	}
	return min(1, max(v/ideal, 1e-9))
}

// floor is the per-GPU allocation TUNE never goes below for j on t:
// min(ideal, share) in each resource (the share for an insensitive job).
func floor(j *scheduler.Job, t Type) (cpus, memBytes float64) {
	if j == nil || j.Matrix == nil {
		return t.CPUsPerGPU, t.MemBytesPerGPU
	}
	return min(j.IdealCPUsPerGPU, t.CPUsPerGPU), min(j.IdealMemBytesPerGPU, t.MemBytesPerGPU)
}
