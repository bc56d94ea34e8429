package scheduler

import (
	"fmt"
	"sort"
)

// Round is the cluster's free resources while one round's placements are
// made, plus the placements so far. Strategies place jobs on it; TUNE may
// revert earlier placements of the same round to their fair share.
// Resources are accounted as Synergy's Server does: used amounts are
// summed, free = capacity − used.
type Round struct {
	cluster *Cluster
	shape   Shape
	used    []Resources // per server
	placed  []*placement
	// onServer lists, per server, the placements of this round that use it
	// (Synergy's server_job_schedule); TUNE sorts these lists in place, so
	// their order carries over within the round as in the original.
	onServer [][]*placement
	freeGPUs int
}

type placement struct {
	job    *Job
	alloc  Allocation
	demand Demand
	// reserved placements come from outside the round (jobs already
	// running in `synergy schedule`); they are never reverted.
	reserved bool
}

// NewRound starts a round on an empty cluster.
func NewRound(c *Cluster) *Round {
	r := &Round{
		cluster:  c,
		shape:    ShapeOf(c),
		used:     make([]Resources, len(c.Servers)),
		onServer: make([][]*placement, len(c.Servers)),
	}
	for _, s := range c.Servers {
		r.freeGPUs += s.GPUs
	}
	return r
}

// Cluster returns the round's cluster.
func (r *Round) Cluster() *Cluster { return r.cluster }

// Shape returns the cluster's shape (per-server size and fair share).
func (r *Round) Shape() Shape { return r.shape }

// FreeGPUs is the number of GPUs not yet placed this round.
func (r *Round) FreeGPUs() int { return r.freeGPUs }

// Free returns server i's free resources.
func (r *Round) Free(i int) Resources {
	s := r.cluster.Servers[i]
	u := r.used[i]
	return Resources{GPUs: s.GPUs - u.GPUs, CPUs: s.CPUs - u.CPUs, MemBytes: float64(s.MemBytes) - u.MemBytes}
}

// Used returns server i's used resources.
func (r *Round) Used(i int) Resources { return r.used[i] }

// Reserve marks an allocation held by a job outside this round's decisions
// (already running) as used. It fails, naming the resource and server, when
// the allocation does not fit.
func (r *Round) Reserve(j *Job, a Allocation) error {
	for _, sa := range a.Servers {
		if sa.Server < 0 || sa.Server >= len(r.cluster.Servers) {
			return fmt.Errorf("reserve job %d: server index %d out of range", a.JobID, sa.Server)
		}
		if sf := r.shortOn(sa.Server, Resources{GPUs: sa.GPUs, CPUs: sa.CPUs, MemBytes: sa.MemBytes}); sf != nil {
			return fmt.Errorf("reserve job %d: %s", a.JobID, sf)
		}
		r.take(sa)
	}
	p := &placement{job: j, alloc: a, reserved: true}
	r.placed = append(r.placed, p)
	for _, sa := range a.Servers {
		r.onServer[sa.Server] = append(r.onServer[sa.Server], p)
	}
	return nil
}

// Allocations returns this round's allocations in placement order (reserved
// ones included), as they stand after any reverts.
func (r *Round) Allocations() []Allocation {
	out := make([]Allocation, 0, len(r.placed))
	for _, p := range r.placed {
		out = append(out, p.alloc)
	}
	return out
}

// EachPlacement calls fn for every placement made this round (not
// reserved), in placement order, with the final allocation.
func (r *Round) EachPlacement(fn func(j *Job, a *Allocation)) {
	for _, p := range r.placed {
		if !p.reserved {
			fn(p.job, &p.alloc)
		}
	}
}

func (r *Round) take(sa ServerAlloc) {
	u := &r.used[sa.Server]
	u.GPUs += sa.GPUs
	u.CPUs += sa.CPUs
	u.MemBytes += sa.MemBytes
	r.freeGPUs -= sa.GPUs
}

func (r *Round) give(sa ServerAlloc) {
	u := &r.used[sa.Server]
	u.GPUs -= sa.GPUs
	u.CPUs -= sa.CPUs
	u.MemBytes -= sa.MemBytes
	r.freeGPUs += sa.GPUs
}

// shortOn returns the first dimension of need that server i cannot cover,
// or nil.
func (r *Round) shortOn(i int, need Resources) *Shortfall {
	f := r.Free(i)
	name := r.cluster.Servers[i].Name
	switch {
	case float64(f.GPUs) < float64(need.GPUs):
		return &Shortfall{Resource: "gpu", Need: float64(need.GPUs), Free: float64(f.GPUs), Server: name}
	case f.CPUs < need.CPUs:
		return &Shortfall{Resource: "cpu", Need: need.CPUs, Free: f.CPUs, Server: name}
	case f.MemBytes < need.MemBytes:
		return &Shortfall{Resource: "mem", Need: need.MemBytes, Free: f.MemBytes, Server: name}
	}
	return nil
}

// firstFit is Synergy's _top_synergy_gpus: walk the free GPUs in index
// order and take each whose server still covers one GPU's share of the
// demand (CPU and memory per GPU), holding what was taken, until n GPUs are
// found. It changes nothing; ok is false when fewer than n GPUs fit.
func (r *Round) firstFit(perGPU PerGPU, n int) (servers []ServerAlloc, ok bool) {
	got := 0
	for i := range r.cluster.Servers {
		if got == n {
			break
		}
		f := r.Free(i)
		var holdCPU, holdMem float64
		k := 0
		for k < f.GPUs && got < n && f.CPUs-holdCPU >= perGPU.CPUs && f.MemBytes-holdMem >= perGPU.MemBytes {
			holdCPU += perGPU.CPUs
			holdMem += perGPU.MemBytes
			k++
			got++
		}
		if k > 0 {
			servers = append(servers, ServerAlloc{Server: i, GPUs: k, CPUs: holdCPU, MemBytes: holdMem})
		}
	}
	if got < n {
		return nil, false
	}
	return servers, true
}

// explain says why n GPUs at perGPU did not fit: for the first servers with
// a free GPU, the first dimension short of one GPU's share.
func (r *Round) explain(perGPU PerGPU, n int) []Shortfall {
	var out []Shortfall
	if r.freeGPUs < n {
		return []Shortfall{{Resource: "gpu", Need: float64(n), Free: float64(r.freeGPUs)}}
	}
	for i := range r.cluster.Servers {
		f := r.Free(i)
		if f.GPUs == 0 {
			continue
		}
		if sf := r.shortOn(i, Resources{GPUs: 1, CPUs: perGPU.CPUs, MemBytes: perGPU.MemBytes}); sf != nil {
			out = append(out, *sf)
			if len(out) == 3 {
				break
			}
		}
	}
	if len(out) == 0 {
		// Every server with a free GPU fits one GPU's share, but not
		// enough of them for n GPUs.
		out = append(out, Shortfall{Resource: "gpu", Need: float64(n), Free: float64(r.fitting(perGPU))})
	}
	return out
}

// fitting counts GPUs that could each take one GPU's share.
func (r *Round) fitting(perGPU PerGPU) int {
	n := 0
	for i := range r.cluster.Servers {
		f := r.Free(i)
		for k := 0; k < f.GPUs && f.CPUs-float64(k+1)*perGPU.CPUs >= 0 && f.MemBytes-float64(k+1)*perGPU.MemBytes >= 0; k++ {
			n++
		}
	}
	return n
}

// commit records a placement and takes its resources.
func (r *Round) commit(j *Job, d Demand, a Allocation) *placement {
	for _, sa := range a.Servers {
		r.take(sa)
	}
	p := &placement{job: j, alloc: a, demand: d}
	r.placed = append(r.placed, p)
	// Synergy appends the job to each server it uses, in the order of
	// Python's set of server ids: ascending for small ints.
	idx := make([]int, 0, len(a.Servers))
	for _, sa := range a.Servers {
		idx = append(idx, sa.Server)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.onServer[i] = append(r.onServer[i], p)
	}
	return p
}

// perGPUOf divides a demand by its GPU count.
func perGPUOf(d Resources) PerGPU {
	n := float64(d.GPUs)
	return PerGPU{CPUs: d.CPUs / n, MemBytes: d.MemBytes / n}
}
