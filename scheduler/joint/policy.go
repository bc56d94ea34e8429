package joint

import (
	"fmt"

	"github.com/synergy-sched/synergy/scheduler/gavel"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// jointPolicy is the joint policy: Gavel's max_min_fairness_perf on each
// job's throughput on each type at floor there (the CPUs and memory TUNE
// never goes below), file rate × Factor(floor), instead of the file's
// CPU-blind rate.
type jointPolicy struct {
	inner   gavel.Policy
	cluster Cluster
	sens    Sensitivities
	cache   map[string][]float64 // job type → factor per State type
}

// newPolicy is the joint policy on c.
func newPolicy(c Cluster, sens Sensitivities) (gavel.Policy, error) {
	inner, err := gavel.NewPolicy("max_min_fairness_perf", 0, false)
	if err != nil {
		return nil, err
	}
	return &jointPolicy{inner: inner, cluster: c, sens: sens, cache: map[string][]float64{}}, nil
}

// Name keeps "Perf" (types visited in priority order, as Gavel's
// heterogeneity-aware policies).
func (p *jointPolicy) Name() string { return "Joint_MaxMinFairness_Perf" }

func (p *jointPolicy) Allocate(s *gavel.State) (gavel.Allocation, error) {
	c := *s
	c.Jobs = make([]gavel.StateJob, len(s.Jobs))
	for i, j := range s.Jobs {
		f, err := p.factors(j.Key.Model, s.Types)
		if err != nil {
			return nil, err
		}
		row := make([]float64, len(j.Throughput))
		for k, v := range j.Throughput {
			row[k] = v * f[k]
		}
		j.Throughput = row
		c.Jobs[i] = j
	}
	return p.inner.Allocate(&c)
}

// factors is Factor at floor on each of types for jobType (cached).
func (p *jointPolicy) factors(jobType string, types []string) ([]float64, error) {
	if f, ok := p.cache[jobType]; ok {
		return f, nil
	}
	j := p.sens.Of(jobType)
	f := make([]float64, len(types))
	for k, name := range types {
		t, ok := p.cluster.byName(name)
		if !ok {
			return nil, fmt.Errorf("GPU type %q is not in the cluster", name)
		}
		c, m := floor(j, t)
		f[k] = Factor(j, c, m)
	}
	p.cache[jobType] = f
	return f, nil
}

// synergyFIFO is Synergy's FIFO on a typed cluster, blind to GPU types as
// Synergy is: in job id (arrival) order each job gets the first type, in
// the spec's order (the order its first fit meets the servers), with its
// GPUs free; a job that fits nowhere waits and later ones are still
// offered.
type synergyFIFO struct{ cluster Cluster }

func (synergyFIFO) Name() string { return "FIFO_Synergy" }

func (p synergyFIFO) Allocate(s *gavel.State) (gavel.Allocation, error) {
	idx := make([]int, 0, len(p.cluster))
	for _, t := range p.cluster {
		for k, name := range s.Types {
			if name == t.Name {
				idx = append(idx, k)
			}
		}
	}
	avail := append([]int(nil), s.Workers...)
	out := gavel.Allocation{}
	for _, j := range s.Jobs {
		row := make([]float64, len(s.Types))
		for _, k := range idx {
			if avail[k] >= j.ScaleFactor && j.Throughput[k] > 0 {
				row[k] = 1
				avail[k] -= j.ScaleFactor
				break
			}
		}
		out[j.ID] = row
	}
	return out, nil
}

// Plugins is the hook of a gavel.Sweep on cluster c (gavel.Sweep.Plugins):
// the joint policy with TUNE; a point with a strategy, Synergy's FIFO with
// that strategy; Gavel's policies with the GPU-proportional share when any
// job type has a sensitivity (otherwise nothing: the file's rates, exactly
// Gavel).
func Plugins(c Cluster, sens Sensitivities) func(simcore.Point) (gavel.Policy, gavel.Shaper, error) {
	return func(pt simcore.Point) (gavel.Policy, gavel.Shaper, error) {
		switch {
		case pt.Strategy != "":
			if pt.Policy != SynergyFIFO {
				return nil, nil, fmt.Errorf("strategy %s: on a typed cluster Synergy's strategies run under its %s, not %s", pt.Strategy, SynergyFIFO, pt.Policy)
			}
			sh, err := newShaper(c, sens, pt.Strategy)
			return synergyFIFO{cluster: c}, sh, err
		case pt.Policy == Policy:
			pol, err := newPolicy(c, sens)
			if err != nil {
				return nil, nil, err
			}
			sh, err := newShaper(c, sens, Tune)
			return pol, sh, err
		case len(sens) > 0:
			sh, err := newShaper(c, sens, Fair)
			return nil, sh, err
		}
		return nil, nil, nil
	}
}
