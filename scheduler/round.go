package scheduler

import (
	"fmt"
	"math"
	"math/bits"
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
	// size and used are per server: its GPUs, CPUs and memory, and what
	// this round's placements use of them (size is the cluster's, kept
	// compact: first fit reads it for every placement).
	size, used []Resources
	placed     []*placement
	// onServer lists, per server, the placements of this round that use it
	// (Synergy's server_job_schedule); TUNE sorts these lists in place, so
	// their order carries over within the round as in the original. Only
	// TUNE's reverts read them, and most rounds revert nothing: they are
	// made at a round's first revert (listOnServers) and kept from there
	// on (listed).
	onServer [][]*placement
	listed   bool
	freeGPUs int
	// free finds servers with room without walking the full ones.
	free *freeIndex
	// fit is firstFit's result, reused: commit copies it out.
	fit []ServerAlloc
	// hints remember, per per-GPU share, where firstFit last found its
	// first server: no server before it could take one GPU of that share.
	// Taking resources keeps that true; giving some back on a server (a
	// revert) moves every hint past it back to it, and a reset moves
	// epoch on, which voids them all. A job usually fits where the last
	// job of its share went, so first fit then looks at that server alone.
	hints [1 << hintBits]fitHint
	epoch uint64
	// readSum keeps placeQuietly's reads ahead (a read whose result is
	// not kept may be left out).
	readSum float64
	// placements and serverLists hold this round's placements and their
	// server lists.
	placements  slab[placement]
	serverLists slab[ServerAlloc]
}

// hintBits sizes Round.hints: 64 shares' hints (a workload of zoo models has
// one share per model).
const hintBits = 6

type fitHint struct {
	per   PerGPU
	epoch uint64
	at    int
}

// hint is the first server that may take one GPU at per: 0, or where a
// search since the last give found the first.
func (r *Round) hint(per PerGPU) (slot *fitHint, at int) {
	// Fibonacci hashing: the product's top bits depend on every bit of
	// both amounts (round amounts differ only in their top bits).
	h := (math.Float64bits(per.CPUs) ^ bits.RotateLeft64(math.Float64bits(per.MemBytes), 32)) * 0x9e3779b97f4a7c15
	slot = &r.hints[h>>(64-hintBits)]
	if slot.epoch == r.epoch && slot.per == per {
		return slot, slot.at
	}
	return slot, 0
}

// nextFit is the first server at index ≥ from that can take one GPU at
// per, or −1: from and the server after it, looked at directly (where the
// job before of the same share went, and where the next goes once that one
// is full), else the index's search.
func (r *Round) nextFit(from int, per PerGPU) int {
	for end := min(from+2, len(r.used)); from < end; from++ {
		if r.fits(from, per) {
			return from
		}
	}
	return r.free.next(from, 1, per.CPUs, per.MemBytes)
}

// fits says whether server i can take one GPU at per: what a leaf of the
// free index holds, read directly.
func (r *Round) fits(i int, per PerGPU) bool {
	s, u := &r.size[i], &r.used[i]
	return s.GPUs-u.GPUs >= 1 && s.CPUs-u.CPUs >= per.CPUs && s.MemBytes-u.MemBytes >= per.MemBytes
}

type placement struct {
	job    *Job
	alloc  Allocation
	demand Demand
	// reserved placements come from outside the round (jobs already
	// running in `synergy schedule`); they are never reverted.
	reserved bool
	// one holds alloc's server list when it has one server (most do).
	one [1]ServerAlloc
}

// NewRound starts a round on an empty cluster.
func NewRound(c *Cluster) *Round {
	r := &Round{
		cluster:  c,
		shape:    ShapeOf(c),
		size:     make([]Resources, len(c.Servers)),
		used:     make([]Resources, len(c.Servers)),
		onServer: make([][]*placement, len(c.Servers)),
	}
	gpus := 0
	for i, s := range c.Servers {
		gpus += max(s.GPUs, 0)
		r.size[i] = Resources{GPUs: s.GPUs, CPUs: s.CPUs, MemBytes: float64(s.MemBytes)}
	}
	// Each placement on a server holds at least one of its GPUs: one
	// backing array gives every server room for as many as it has GPUs
	// (a longer list grows on its own).
	back := make([]*placement, gpus)
	off := 0
	for i, s := range c.Servers {
		n := max(s.GPUs, 0)
		r.onServer[i] = back[off : off : off+n]
		off += n
	}
	r.Reset()
	return r
}

// Reset empties the round for the next one on the same cluster, keeping
// its memory: every server free, no placement. Allocations and decisions
// the round gave out before are overwritten; the simulator, which keeps
// none, reuses one round this way.
func (r *Round) Reset() {
	clear(r.used)
	r.freeGPUs = 0
	for _, s := range r.cluster.Servers {
		r.freeGPUs += s.GPUs
	}
	if r.listed {
		for i := range r.onServer {
			clear(r.onServer[i])
			r.onServer[i] = r.onServer[i][:0]
		}
		r.listed = false
	}
	clear(r.placed)
	r.placed = r.placed[:0]
	r.placements.reset()
	r.serverLists.reset()
	if r.free == nil {
		r.free = newFreeIndex(r)
	} else {
		r.free.rebuild()
	}
	r.epoch++
}

// Cluster returns the round's cluster.
func (r *Round) Cluster() *Cluster { return r.cluster }

// Shape returns the cluster's shape (per-server size and fair share).
func (r *Round) Shape() Shape { return r.shape }

// FreeGPUs is the number of GPUs not yet placed this round.
func (r *Round) FreeGPUs() int { return r.freeGPUs }

// Free returns server i's free resources.
func (r *Round) Free(i int) Resources {
	s, u := &r.size[i], &r.used[i]
	return Resources{GPUs: s.GPUs - u.GPUs, CPUs: s.CPUs - u.CPUs, MemBytes: s.MemBytes - u.MemBytes}
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
		if sa.GPUs < 0 || !(sa.CPUs >= 0) || !(sa.MemBytes >= 0) {
			// A take only ever lowers what is free: the round's hints
			// and free index rely on it.
			return fmt.Errorf("reserve job %d: negative or invalid amount on server %d", a.JobID, sa.Server)
		}
		if sf := r.shortOn(sa.Server, Resources{GPUs: sa.GPUs, CPUs: sa.CPUs, MemBytes: sa.MemBytes}); sf != nil {
			return fmt.Errorf("reserve job %d: %s", a.JobID, sf)
		}
		r.take(sa)
	}
	p := &placement{job: j, alloc: a, reserved: true}
	r.placed = append(r.placed, p)
	if r.listed {
		r.list(p)
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
	r.free.taken(sa.Server)
}

func (r *Round) give(sa ServerAlloc) {
	// The server may take a share again: no hint may be past it.
	for k := range r.hints {
		r.hints[k].at = min(r.hints[k].at, sa.Server)
	}
	u := &r.used[sa.Server]
	u.GPUs -= sa.GPUs
	u.CPUs -= sa.CPUs
	u.MemBytes -= sa.MemBytes
	r.freeGPUs += sa.GPUs
	r.free.given(sa.Server)
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
// found. It changes nothing; ok is false when fewer than n GPUs fit. The
// walk visits only the servers that can take one GPU's share (free.next):
// a server that cannot gives no GPU in the original's walk either.
// The servers returned are valid until the next call.
func (r *Round) firstFit(perGPU PerGPU, n int) (servers []ServerAlloc, ok bool) {
	buf := r.fit[:0]
	got := 0
	slot, from := r.hint(perGPU)
	first := r.nextFit(from, perGPU)
	slot.per, slot.epoch, slot.at = perGPU, r.epoch, first
	if first < 0 {
		slot.at = len(r.used)
	}
	if n == 1 && first >= 0 {
		// One GPU: the first server that takes one GPU's share, holding
		// exactly that share (as the loop below would).
		r.fit = append(buf, ServerAlloc{Server: first, GPUs: 1, CPUs: perGPU.CPUs, MemBytes: perGPU.MemBytes})
		return r.fit, true
	}
	for i := first; i >= 0; i = r.nextFit(i+1, perGPU) {
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
			buf = append(buf, ServerAlloc{Server: i, GPUs: k, CPUs: holdCPU, MemBytes: holdMem})
		}
		if got == n {
			break
		}
	}
	r.fit = buf
	if got < n {
		return nil, false
	}
	return buf, true
}

// explain says why n GPUs at perGPU did not fit: for the first servers with
// a free GPU, the first dimension short of one GPU's share. Called after a
// placement failed, it visits fewer than n servers that fit before it finds
// the three that do not, or runs out.
func (r *Round) explain(perGPU PerGPU, n int) []Shortfall {
	var out []Shortfall
	if r.freeGPUs < n {
		return []Shortfall{{Resource: "gpu", Need: float64(n), Free: float64(r.freeGPUs)}}
	}
	for i := r.free.nextWithFree(0); i >= 0; i = r.free.nextWithFree(i + 1) {
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
	for i := r.free.nextWithFree(0); i >= 0; i = r.free.nextWithFree(i + 1) {
		f := r.Free(i)
		for k := 0; k < f.GPUs && f.CPUs-float64(k+1)*perGPU.CPUs >= 0 && f.MemBytes-float64(k+1)*perGPU.MemBytes >= 0; k++ {
			n++
		}
	}
	return n
}

// commit records j's placement on servers at demand d, speedup and
// demoted, and takes its resources; it keeps its own copy of servers.
// Fields are written one at a time: a whole struct copied from one built
// just before is read back before its stores have landed, and the
// processor waits for them.
func (r *Round) commit(j *Job, d Demand, servers []ServerAlloc, speedup float64, demoted bool) *placement {
	p := &r.placements.take(1)[0]
	p.job, p.demand, p.reserved = j, d, false
	p.alloc.JobID, p.alloc.Speedup, p.alloc.Demoted, p.alloc.Reverted = j.ID, speedup, demoted, false
	held := p.one[:]
	if len(servers) != 1 {
		held = r.serverLists.take(len(servers))
	}
	for k := range servers {
		sa := &servers[k]
		held[k].Server, held[k].GPUs, held[k].CPUs, held[k].MemBytes = sa.Server, sa.GPUs, sa.CPUs, sa.MemBytes
	}
	p.alloc.Servers = held
	for k := range held {
		r.take(held[k])
	}
	r.placed = append(r.placed, p)
	if r.listed {
		r.list(p)
	}
	return p
}

// listOnServers makes onServer for the round's placements so far, if not
// made yet; commit and Reserve keep it from then on.
func (r *Round) listOnServers() {
	if r.listed {
		return
	}
	r.listed = true
	for _, p := range r.placed {
		r.list(p)
	}
}

// list appends p to the lists of the servers it uses. Synergy appends the
// job to each server it uses in the order of Python's set of server ids:
// ascending for small ints.
func (r *Round) list(p *placement) {
	held := p.alloc.Servers
	sorted := true
	for k := 1; k < len(held); k++ {
		sorted = sorted && held[k-1].Server < held[k].Server
	}
	if sorted {
		for k := range held {
			i := held[k].Server
			r.onServer[i] = append(r.onServer[i], p)
		}
		return
	}
	idx := make([]int, 0, len(held))
	for _, sa := range held {
		idx = append(idx, sa.Server)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.onServer[i] = append(r.onServer[i], p)
	}
}

// perGPUOf divides a demand by its GPU count.
func perGPUOf(d Resources) PerGPU {
	if d.GPUs == 1 {
		return PerGPU{CPUs: d.CPUs, MemBytes: d.MemBytes} // x / 1 is x
	}
	n := float64(d.GPUs)
	return PerGPU{CPUs: d.CPUs / n, MemBytes: d.MemBytes / n}
}
