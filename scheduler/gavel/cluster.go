package gavel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
)

// DefaultTypes are the GPU types that a bare Gavel cluster spec V:P:K
// names, in its order.
var DefaultTypes = []string{"v100", "p100", "k80"}

// ClusterSpec is a cluster of typed GPUs: Types in priority order (the
// order in which heterogeneity-aware rounds fill types, Gavel's v100,
// p100, k80), GPUs per type, and GPUs per server per type (1 by default,
// as Gavel's --num_gpus_per_server). Type names are free-form.
type ClusterSpec struct {
	Types         []string
	GPUs          []int
	GPUsPerServer []int
}

// ParseClusterSpec reads "8:16:24" (GPUs of v100, p100, k80, as Gavel's
// -c) or "a100=8:l40s=16" (free-form types, in priority order). A
// per-server spec (perServer, may be empty) has the same shape.
func ParseClusterSpec(spec, perServer string) (ClusterSpec, error) {
	var c ClusterSpec
	fields := strings.Split(spec, ":")
	seen := map[string]bool{}
	for i, f := range fields {
		name, num, named := strings.Cut(f, "=")
		if !named {
			if len(fields) != len(DefaultTypes) {
				return c, fmt.Errorf("cluster spec %q: give %d counts (v100:p100:k80) or name=count fields (a100=8:h100=4)", spec, len(DefaultTypes))
			}
			name, num = DefaultTypes[i], f
		}
		name = strings.TrimSpace(name)
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 0 || name == "" {
			return c, fmt.Errorf("cluster spec %q: field %d (%q): want a GPU count ≥ 0 or name=count", spec, i+1, f)
		}
		if seen[name] {
			return c, fmt.Errorf("cluster spec %q: type %q given twice", spec, name)
		}
		seen[name] = true
		c.Types = append(c.Types, name)
		c.GPUs = append(c.GPUs, n)
		c.GPUsPerServer = append(c.GPUsPerServer, 1)
	}
	if perServer != "" {
		ps := strings.Split(perServer, ":")
		if len(ps) != len(c.Types) {
			return c, fmt.Errorf("GPUs per server %q: want %d fields, one per type of the cluster spec", perServer, len(c.Types))
		}
		for i, f := range ps {
			_, num, named := strings.Cut(f, "=")
			if !named {
				num = f
			}
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if err != nil || n < 1 {
				return c, fmt.Errorf("GPUs per server %q: field %d: want an integer ≥ 1", perServer, i+1)
			}
			c.GPUsPerServer[i] = n
		}
	}
	return c, c.Validate()
}

// Validate checks the spec.
func (c ClusterSpec) Validate() error {
	if len(c.Types) == 0 || len(c.GPUs) != len(c.Types) || len(c.GPUsPerServer) != len(c.Types) {
		return fmt.Errorf("cluster spec: %d types, %d counts, %d per-server sizes", len(c.Types), len(c.GPUs), len(c.GPUsPerServer))
	}
	total := 0
	for i, n := range c.GPUs {
		if c.GPUsPerServer[i] < 1 {
			return fmt.Errorf("cluster spec: type %q: GPUs per server must be ≥ 1", c.Types[i])
		}
		// Each count is checked before it is added, so the sum cannot
		// overflow.
		if n < 0 || n > MaxGPUs || c.GPUsPerServer[i] > MaxGPUs {
			return fmt.Errorf("cluster spec: type %q: %d GPUs, %d per server: at most %d (gavel.MaxGPUs)", c.Types[i], n, c.GPUsPerServer[i], MaxGPUs)
		}
		if total += n; total > MaxGPUs {
			return fmt.Errorf("cluster spec: more than %d GPUs in all (gavel.MaxGPUs)", MaxGPUs)
		}
	}
	if total == 0 {
		return fmt.Errorf("cluster spec: no GPUs")
	}
	return nil
}

// String is the spec in the form ParseClusterSpec reads.
func (c ClusterSpec) String() string {
	parts := make([]string, len(c.Types))
	for i, t := range c.Types {
		parts[i] = fmt.Sprintf("%s=%d", t, c.GPUs[i])
	}
	return strings.Join(parts, ":")
}

// TotalGPUs sums the GPUs.
func (c ClusterSpec) TotalGPUs() int {
	n := 0
	for _, g := range c.GPUs {
		n += g
	}
	return n
}

// sortedTypes is the types in name order with each one's index in Types
// (Gavel registers workers and flattens allocations in name order).
func (c ClusterSpec) sortedTypes() []string {
	s := append([]string(nil), c.Types...)
	sort.Strings(s)
	return s
}

// SpecFromCluster turns a typed cluster (scheduler.Cluster whose servers
// name their gpu_type) into a spec: types in order of first appearance,
// GPUs summed per type; a type's servers must all hold the same number of
// GPUs (Gavel's model of a type: one server size).
func SpecFromCluster(c scheduler.Cluster) (ClusterSpec, error) {
	var spec ClusterSpec
	idx := map[string]int{}
	for i, s := range c.Servers {
		if s.GPUType == "" {
			return spec, fmt.Errorf("cluster %q: servers[%d] (%s) has no gpu_type: Gavel mode needs every server typed", c.Name, i, s.Name)
		}
		k, ok := idx[s.GPUType]
		if !ok {
			k = len(spec.Types)
			idx[s.GPUType] = k
			spec.Types = append(spec.Types, s.GPUType)
			spec.GPUs = append(spec.GPUs, 0)
			spec.GPUsPerServer = append(spec.GPUsPerServer, s.GPUs)
		}
		if spec.GPUsPerServer[k] != s.GPUs {
			return spec, fmt.Errorf("cluster %q: servers[%d] (%s): %d GPUs, but other %s servers have %d (one server size per type)", c.Name, i, s.Name, s.GPUs, s.GPUType, spec.GPUsPerServer[k])
		}
		if s.GPUs < 0 || s.GPUs > MaxGPUs-spec.GPUs[k] {
			return spec, fmt.Errorf("cluster %q: servers[%d] (%s): %s GPUs past %d (gavel.MaxGPUs)", c.Name, i, s.Name, s.GPUType, MaxGPUs)
		}
		spec.GPUs[k] += s.GPUs
	}
	return spec, spec.Validate()
}
