package k8s

import (
	"fmt"

	"github.com/synergy-sched/synergy/scheduler"
)

// Queue is what one scheduling pass asks of a Placer: the cluster, what is
// already used on it, and the jobs waiting, in arrival order.
type Queue struct {
	Cluster  scheduler.Cluster
	Used     []Used
	Jobs     []*scheduler.Job
	Strategy scheduler.Strategy
}

// Placed is one job's outcome.
type Placed struct {
	JobID  int
	Placed bool
	// Servers is where the job's GPUs, CPUs and memory are, by server
	// name, when Placed.
	Servers []Used
	Speedup float64
	// Demoted or Reverted: the job got its GPU-proportional share instead
	// of its ideal demand.
	Demoted, Reverted bool
	Note              string
	Shortfalls        []scheduler.Shortfall
	Reason            string
}

// Placer places a queue the way `synergy schedule` does. It is the seam
// between this bridge and package scheduler's use case.
type Placer interface {
	Place(q Queue) ([]Placed, error)
}

// QueuePlacer is `synergy schedule`'s placement of a queue on a cluster's
// free resources, built from package scheduler's parts: the used resources
// are reserved on a fresh Round, the jobs are offered in FIFO order (as
// arrivals 0, 1, 2, ...; DRF and Tetris re-order them) to the strategy,
// and each job's final allocation is read back after the whole queue is
// placed (TUNE may revert earlier placements). cmd/synergy/schedule.go does
// the same; both are to call the one use-case function of package
// scheduler when it has it.
type QueuePlacer struct{}

// Place implements Placer.
func (QueuePlacer) Place(q Queue) ([]Placed, error) {
	c := q.Cluster
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := scheduler.NewRound(&c)
	index := map[string]int{}
	for i, s := range c.Servers {
		index[s.Name] = i
	}
	for k, u := range q.Used {
		i, ok := index[u.Server]
		if !ok {
			return nil, fmt.Errorf("used[%d]: no server %q in the cluster", k, u.Server)
		}
		held := &scheduler.Job{ID: -1 - k, Model: "in use", GPUs: max(u.GPUs, 1)}
		a := scheduler.Allocation{JobID: held.ID, Servers: []scheduler.ServerAlloc{{Server: i, GPUs: u.GPUs, CPUs: u.CPUs, MemBytes: u.MemBytes}}, Speedup: 1}
		if err := r.Reserve(held, a); err != nil {
			return nil, fmt.Errorf("used on %s: %w", u.Server, err)
		}
	}
	shape := r.Shape()
	var actives []*scheduler.Active
	for k, j := range q.Jobs {
		j.ArrivalSeconds = float64(k)
		actives = append(actives, scheduler.NewActive(j, scheduler.IdealDemand(j, shape).Speedup))
	}
	offer := scheduler.Offer(scheduler.FIFO{}, q.Strategy, actives, &c, scheduler.OrderContext{FreeGPUs: r.FreeGPUs(), FairRates: q.Strategy.FairRates()})
	jobs := make([]*scheduler.Job, len(offer))
	for k, a := range offer {
		jobs[k] = a.Job
	}
	decisions := scheduler.Schedule(r, q.Strategy, jobs)
	final := map[int]scheduler.Allocation{}
	r.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) { final[j.ID] = *a })
	byID := map[int]scheduler.Decision{}
	for _, d := range decisions {
		byID[d.JobID] = d
	}
	out := make([]Placed, 0, len(q.Jobs))
	for _, j := range q.Jobs {
		d := byID[j.ID]
		p := Placed{JobID: j.ID, Placed: d.Placed, Note: d.Note, Shortfalls: d.Shortfalls, Reason: d.Reason()}
		if d.Placed {
			a := final[j.ID]
			p.Speedup, p.Demoted, p.Reverted = a.Speedup, a.Demoted, a.Reverted
			for _, sa := range a.Servers {
				p.Servers = append(p.Servers, Used{Server: c.Servers[sa.Server].Name, GPUs: sa.GPUs, CPUs: sa.CPUs, MemBytes: sa.MemBytes})
			}
		}
		out = append(out, p)
	}
	return out, nil
}
