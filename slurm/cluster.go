package slurm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/synergy-sched/synergy/scheduler"
)

// usableStates are the base states a node takes jobs in.
var usableStates = []string{"idle", "mixed", "allocated"}

// badFlags are the state flags that keep new jobs off a node.
var badFlags = []string{"DRAIN", "DRAINING", "DRAINED", "NOT_RESPONDING", "MAINTENANCE", "RESERVED", "POWERED_DOWN", "POWERING_DOWN", "REBOOT_REQUESTED", "FAIL"}

// clusterOf makes the scheduler's cluster of the usable GPU nodes (of
// cfg.Partition), in sinfo's order, and says why each other node is left
// out. Memory is RealMemory in bytes.
func clusterOf(cfg Config, nodes []Node) (scheduler.Cluster, []string) {
	name := cfg.ClusterName
	if name == "" {
		name = "slurm"
	}
	c := scheduler.Cluster{Name: name}
	var excluded []string
	for _, n := range nodes {
		if cfg.Partition != "" && !slices.Contains(n.Partitions, cfg.Partition) {
			continue
		}
		if why := unusable(n); why != "" {
			excluded = append(excluded, n.Name+": "+why)
			continue
		}
		c.Servers = append(c.Servers, scheduler.Server{Name: n.Name, GPUs: n.GPUs, CPUs: float64(n.CPUs), MemBytes: n.MemMiB * MiB})
	}
	return c, excluded
}

func unusable(n Node) string {
	switch {
	case n.GPUs == 0:
		return "no GPUs (gres gpu)"
	case n.CPUs <= 0 || n.MemMiB <= 0:
		return fmt.Sprintf("%d CPUs, %d MiB", n.CPUs, n.MemMiB)
	case !slices.Contains(usableStates, n.State):
		return "state " + n.State
	}
	for _, f := range n.Flags {
		if slices.Contains(badFlags, strings.ToUpper(f)) {
			return "state " + n.State + "+" + strings.ToLower(f)
		}
	}
	return ""
}

// usedOf is what each cluster node holds: its running jobs' allocation
// plus the placements not yet running, capped at the node's size (a job
// that started between the reads is counted twice, never missed).
func usedOf(c *scheduler.Cluster, nodes []Node, placed []Placement) []scheduler.Usage {
	byName := map[string]*scheduler.Usage{}
	var out []scheduler.Usage
	for _, n := range nodes {
		byName[n.Name] = &scheduler.Usage{Server: n.Name, GPUs: n.AllocGPUs, CPUs: float64(n.AllocCPUs), MemBytes: float64(n.AllocMemMiB * MiB)}
	}
	for _, p := range placed {
		if u := byName[p.Node]; u != nil {
			u.GPUs += p.GPUs
			u.CPUs += float64(p.CPUs)
			u.MemBytes += float64(p.MemMiB * MiB)
		}
	}
	for _, s := range c.Servers {
		u := byName[s.Name]
		u.GPUs, u.CPUs, u.MemBytes = min(u.GPUs, s.GPUs), min(u.CPUs, s.CPUs), min(u.MemBytes, float64(s.MemBytes))
		if u.GPUs > 0 || u.CPUs > 0 || u.MemBytes > 0 {
			out = append(out, *u)
		}
	}
	return out
}
