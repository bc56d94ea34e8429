package slurm

import (
	"fmt"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// BenchmarkPlanRound is what one round's decision costs the bridge on a
// cluster of 1,000 nodes (8 GPUs, 24 CPUs, 500 GB each) with 10,000 jobs
// that opted in (1, 2, 4 or 8 GPUs, the three example profiles, read
// once): the round after a first one, whose placed jobs now run where it
// put them. The Slurm commands a round sends (squeue and sinfo, and for
// each job it moves a mark, a signal, a requeue and a pin) come on top.
func BenchmarkPlanRound(b *testing.B) {
	profiles := map[string]*sensitivity.Profile{}
	for _, name := range []string{"image", "language", "audio"} {
		p, err := sensitivity.LoadFilled(examples + name + ".json")
		if err != nil {
			b.Fatal(err)
		}
		profiles[name] = p
	}
	load := func(path string) (*sensitivity.Profile, error) {
		for name, p := range profiles {
			if path == examples+name+".json" {
				return p, nil
			}
		}
		return nil, fmt.Errorf("no profile %s", path)
	}
	names := []string{"image", "language", "audio"}
	gpus := []int{1, 2, 4, 8}
	for _, policy := range []scheduler.Policy{scheduler.FIFO{}, scheduler.LAS{}} {
		for _, strategy := range []scheduler.Strategy{scheduler.Tune{}, scheduler.Fair{}} {
			cfg := Config{Strategy: strategy, Policy: policy, LoadProfile: load}
			// The state after a first round over 10,000 held jobs: those it
			// placed run where it put them, the others wait.
			var snap Snapshot
			for i := range 1000 {
				snap.Nodes = append(snap.Nodes, Node{Name: fmt.Sprintf("node%04d", i), Partitions: []string{"gpu"}, State: "idle",
					CPUs: 24, MemMiB: 476837, GPUs: 8})
			}
			for k := range 10000 {
				snap.Jobs = append(snap.Jobs, heldJob(k+1, examples+names[k%3]+".json", gpus[k%4]))
			}
			first, err := PlanRound(snap, cfg, time.Unix(100000, 0))
			if err != nil {
				b.Fatal(err)
			}
			node := map[string]*Node{}
			for i := range snap.Nodes {
				node[snap.Nodes[i].Name] = &snap.Nodes[i]
			}
			for _, a := range first.Actions {
				if a.Kind != Place {
					continue
				}
				j := &snap.Jobs[a.Job.ID-1]
				j.State, j.Reason, j.StartTime, j.Comment = "RUNNING", "None", int64(100000-a.Job.ID%500), a.Comment
				n := node[a.Placement.Node]
				n.State, n.AllocGPUs, n.AllocCPUs, n.AllocMemMiB = "mixed", n.AllocGPUs+a.Placement.GPUs, n.AllocCPUs+a.Placement.CPUs, n.AllocMemMiB+a.Placement.MemMiB
			}
			b.Run(policy.Name()+"/"+strategy.Name(), func(b *testing.B) {
				var plan RoundPlan
				for range b.N {
					if plan, err = PlanRound(snap, cfg, time.Unix(100300, 0)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(plan.Moves)), "moves")
				b.ReportMetric(float64(len(plan.Keep)), "kept")
			})
		}
	}
}
