package scheduler

import (
	"fmt"
	"math"
	"sort"
)

// Strategy decides how much CPU and memory each offered job gets alongside
// its GPUs, and where. The simulator and `synergy schedule` offer jobs in a
// Policy's order, one at a time, and only when the round still has at least
// the job's GPU count free.
type Strategy interface {
	// Name is the strategy's name on the command line ("fair", "tune").
	Name() string
	// FairRates reports whether ordering policies should estimate a job's
	// remaining time at fair-share speed (Synergy's `fair` flag) rather
	// than at the speed-up of its last allocation.
	FairRates() bool
	// Place tries to place j on r and says what it did or why it could
	// not. It may change earlier placements of the same round (TUNE).
	Place(r *Round, j *Job) Decision
}

// BatchStrategy places all offered jobs of a round at once (Synergy-OPT);
// Schedule prefers PlaceAll when a strategy has it.
type BatchStrategy interface {
	Strategy
	PlaceAll(r *Round, jobs []*Job) []Decision
}

// LargestFirst is implemented by strategies before which the LAS policy
// offers its chosen jobs largest GPU demand first (the original re-sorts
// LAS's jobs by GPU demand when TUNE is on).
type LargestFirst interface {
	LargestFirst() bool
}

// Schedule offers jobs to s in order on r and returns one decision per job,
// in the same order. A job needing more GPUs than are free is not offered;
// its decision names the GPU shortfall.
func Schedule(r *Round, s Strategy, jobs []*Job) []Decision {
	if b, ok := s.(BatchStrategy); ok {
		return b.PlaceAll(r, jobs)
	}
	out := make([]Decision, len(jobs))
	offerEach(r, s, jobs, func(j *Job) *Job { return j }, out)
	return out
}

// SchedulePlaced is Schedule over a policy's offer (Offer) for a caller
// that reads the placements from r (EachPlacement) and needs no decisions,
// as the simulator does every round: it returns how many jobs were placed,
// spends nothing on the jobs left waiting and stops offering once no GPU is
// free.
func SchedulePlaced(r *Round, s Strategy, offer []*Active) int {
	if b, ok := s.(BatchStrategy); ok {
		jobs := make([]*Job, len(offer))
		for k, a := range offer {
			jobs[k] = a.Job
		}
		n := 0
		for _, d := range b.PlaceAll(r, jobs) {
			if d.Placed {
				n++
			}
		}
		return n
	}
	if q, ok := s.(quietPlacer); ok {
		return placeQuietly(r, q, offer)
	}
	return offerEach(r, s, offer, func(a *Active) *Job { return a.Job }, nil)
}

// placeQuietly offers the jobs of offer to q in order, as offerEach does,
// a batch at a time: it first reads each job's GPU count and speed-up (the
// first and last of the fields strategies read) in a loop of independent
// loads, so that the jobs, scattered in memory, are fetched together rather
// than one at a time between placements (at 10,000 GPUs a round's jobs do
// not fit the processor's caches).
func placeQuietly(r *Round, q quietPlacer, offer []*Active) (placed int) {
	var jobs [64]*Job
	var gpus [64]int
	var fetched float64
	for len(offer) > 0 && r.freeGPUs > 0 {
		n := min(len(offer), len(jobs))
		for k, a := range offer[:n] {
			jobs[k] = a.Job
		}
		for k, j := range jobs[:n] {
			gpus[k] = j.GPUs
			fetched += j.Speedup
		}
		for k, j := range jobs[:n] {
			if r.freeGPUs == 0 {
				break
			}
			if gpus[k] <= r.freeGPUs && q.placeQuiet(r, j) {
				placed++
			}
		}
		offer = offer[n:]
	}
	r.readSum = fetched
	return placed
}

// quietPlacer is a Strategy that can place a job without saying why
// (SchedulePlaced keeps no decision): placeQuiet is Place's placement,
// with neither its decision nor its explanations of shortfalls.
type quietPlacer interface {
	placeQuiet(r *Round, j *Job) bool
}

// offerEach offers the jobs of offer to s one at a time, in order, each
// only when its GPUs fit the GPUs still free, and counts the jobs placed.
// out, when not nil, receives each job's decision at its index; when nil,
// offering stops once no GPU is free (every job needs at least one).
func offerEach[T any](r *Round, s Strategy, offer []T, job func(T) *Job, out []Decision) (placed int) {
	for k, x := range offer {
		if out == nil && r.FreeGPUs() == 0 {
			break
		}
		j := job(x)
		if j.GPUs > r.FreeGPUs() {
			if out != nil {
				out[k] = waitingForGPUs(r, j)
			}
			continue
		}
		d := s.Place(r, j)
		if d.Placed {
			placed++
		}
		if out != nil {
			out[k] = d
		}
	}
	return placed
}

// waitingForGPUs is the decision for a job not offered: more GPUs than are
// free.
func waitingForGPUs(r *Round, j *Job) Decision {
	return Decision{JobID: j.ID, Note: "waiting", Shortfalls: []Shortfall{{Resource: "gpu", Need: float64(j.GPUs), Free: float64(r.FreeGPUs())}}}
}

// Fair is GPU-proportional allocation: every GPU comes with the cluster's
// fair share of CPU and memory (3 CPUs and 62.5 GB on the default cluster),
// placed first-fit by GPU index (Synergy's `+fair`).
type Fair struct{}

func (Fair) Name() string    { return "fair" }
func (Fair) FairRates() bool { return true }

// Place implements Strategy.
func (f Fair) Place(r *Round, j *Job) Decision {
	var d Decision
	f.place(r, j, &d)
	return d
}

func (f Fair) placeQuiet(r *Round, j *Job) bool { return f.place(r, j, nil) }

// place is Place; it fills why only when why is not nil.
func (Fair) place(r *Round, j *Job, why *Decision) bool {
	d := Demand{Ideal: FairDemand(j, r.shape), Speedup: 1}
	return r.placeFirstFit(j, r.shape.Fair, d, "fair share", "fair share did not fit", why)
}

// placeFirstFit places j first-fit at per GPU, committing demand d at its
// speed-up, or leaves it waiting; when why is not nil it says so with
// placed or waiting as the note (and, waiting, the shortfalls).
func (r *Round) placeFirstFit(j *Job, per PerGPU, d Demand, placed, waiting string, why *Decision) bool {
	servers, ok := r.firstFit(per, j.GPUs)
	if !ok {
		if why != nil {
			*why = Decision{JobID: j.ID, Note: waiting, Shortfalls: r.explain(per, j.GPUs)}
		}
		return false
	}
	p := r.commit(j, d, servers, d.Speedup, false)
	if why != nil {
		*why = Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: placed}
	}
	return true
}

// Greedy is Synergy-GREEDY: the job's ideal demand if it fits first-fit,
// else the job waits this round, even when GPUs stay idle (the paper's
// foil; Synergy's scheduler with neither `+fair` nor `+tune`).
type Greedy struct{}

func (Greedy) Name() string    { return "greedy" }
func (Greedy) FairRates() bool { return false }

// Place implements Strategy.
func (g Greedy) Place(r *Round, j *Job) Decision {
	var d Decision
	g.place(r, j, &d)
	return d
}

func (g Greedy) placeQuiet(r *Round, j *Job) bool { return g.place(r, j, nil) }

// place is Place; it fills why only when why is not nil.
func (Greedy) place(r *Round, j *Job, why *Decision) bool {
	d := IdealDemand(j, r.shape)
	return r.placeFirstFit(j, perGPUOf(d.Ideal), d, "ideal demand", "ideal demand did not fit", why)
}

// Tune is Synergy-TUNE (cluster.py allocate_synergy_tune and _tune):
//  1. place the job's ideal demand first-fit by GPU index;
//  2. else, if the ideal exceeds the GPU-proportional share in CPU or
//     memory, drop the job to that share (speed-up 1) and retry;
//  3. else pick servers with free GPUs (for a multi-GPU job the first
//     server with enough free GPUs, otherwise servers fewest-free-GPUs
//     first) and on each revert this round's peers to their fair share,
//     peers ordered by servers spanned, then CPUs per GPU descending, then
//     memory per GPU descending, until the job's share fits there; retry.
//
// No job ever gets less than its fair share. Where the original exits the
// process when step 3 still fails, Tune leaves the job waiting and says why.
type Tune struct{}

func (Tune) Name() string       { return "tune" }
func (Tune) FairRates() bool    { return false }
func (Tune) LargestFirst() bool { return true }

// Place implements Strategy.
func (t Tune) Place(r *Round, j *Job) Decision {
	var d Decision
	t.place(r, j, &d)
	return d
}

func (t Tune) placeQuiet(r *Round, j *Job) bool { return t.place(r, j, nil) }

// place is Place; it fills why (explaining shortfalls on the way) only when
// why is not nil.
func (Tune) place(r *Round, j *Job, why *Decision) bool {
	d := IdealDemand(j, r.shape)
	demand, speed := d.Ideal, d.Speedup
	if servers, ok := r.firstFit(perGPUOf(demand), j.GPUs); ok {
		p := r.commit(j, d, servers, speed, false)
		if why != nil {
			*why = Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: "ideal demand"}
		}
		return true
	}
	var short []Shortfall
	if why != nil {
		short = r.explain(perGPUOf(demand), j.GPUs)
	}
	demoted := false
	if exceedsFair(demand, j.GPUs, r.shape) {
		demand, speed, demoted = FairDemand(j, r.shape), 1, true
		if servers, ok := r.firstFit(perGPUOf(demand), j.GPUs); ok {
			p := r.commit(j, d, servers, speed, true)
			if why != nil {
				*why = Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: "dropped to fair share: ideal demand did not fit", Shortfalls: short}
			}
			return true
		}
	}
	reverted := r.revertFor(j, demand)
	servers, ok := r.firstFit(perGPUOf(demand), j.GPUs)
	if !ok {
		if why != nil {
			*why = Decision{JobID: j.ID, Note: fmt.Sprintf("share did not fit even after reverting %d peers", reverted), Shortfalls: r.explain(perGPUOf(demand), j.GPUs)}
		}
		return false
	}
	p := r.commit(j, d, servers, speed, demoted)
	if why != nil {
		note := fmt.Sprintf("reverted %d peers to fair share", reverted)
		if demoted {
			note = "dropped to fair share and " + note
		}
		*why = Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: note, Shortfalls: short}
	}
	return true
}

// revertFor is TUNE's third step for job j at demand: on the servers
// underutilized picks, this round's peers go back to their fair share until
// j's part of demand fits there. It returns how many were reverted.
func (r *Round) revertFor(j *Job, demand Resources) (reverted int) {
	for _, sg := range r.underutilized(j.GPUs) {
		free := r.Free(sg.server)
		ratio := float64(sg.gpus) / float64(j.GPUs)
		need := [3]float64{
			max0(float64(j.GPUs)*ratio - float64(free.GPUs)),
			max0(demand.CPUs*ratio - free.CPUs),
			max0(demand.MemBytes*ratio - free.MemBytes),
		}
		for _, p := range r.peersToRevert(sg.server, need) {
			r.revert(p)
			reverted++
		}
	}
	return reverted
}

func max0(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0
}

type serverGPUs struct{ server, gpus int }

// underutilized is Synergy's _get_underutilized_servers: for a multi-GPU
// job the first server with n free GPUs; otherwise servers in the order a
// heap of (free GPUs, server) pops them, fewest free first, until they
// hold n free GPUs (a single-GPU job: the one server with the fewest).
func (r *Round) underutilized(n int) []serverGPUs {
	if n > 1 {
		if i := r.free.next(0, n, math.Inf(-1), math.Inf(-1)); i >= 0 {
			return []serverGPUs{{i, n}}
		}
	}
	if n == 1 {
		if i := r.free.fewestFree(); i >= 0 {
			return []serverGPUs{{i, 1}}
		}
		return nil
	}
	var cand []serverGPUs
	for i := r.free.nextWithFree(0); i >= 0; i = r.free.nextWithFree(i + 1) {
		cand = append(cand, serverGPUs{i, r.Free(i).GPUs})
	}
	// A heap of (free GPUs, server) pops in this order.
	sort.Slice(cand, func(a, b int) bool {
		if cand[a].gpus != cand[b].gpus {
			return cand[a].gpus < cand[b].gpus
		}
		return cand[a].server < cand[b].server
	})
	var out []serverGPUs
	for _, c := range cand {
		if n <= 0 {
			break
		}
		if c.gpus >= n {
			return append(out, serverGPUs{c.server, n})
		}
		out = append(out, c)
		n -= c.gpus
	}
	return out
}

// peersToRevert is Synergy's _reallocate_peer: this round's jobs on server
// srv, sorted in place (stably) by servers spanned, CPUs per GPU
// descending, memory per GPU descending, taken in that order until their
// surplus over fair share on this server covers need (GPUs, CPUs, memory).
func (r *Round) peersToRevert(srv int, need [3]float64) []*placement {
	if need == [3]float64{} {
		return nil
	}
	r.listOnServers()
	list := r.onServer[srv]
	type key struct {
		spans    int
		cpu, mem float64
	}
	keys := make(map[*placement]key, len(list))
	for _, p := range list {
		t := p.alloc.Total()
		keys[p] = key{len(p.alloc.Servers), -(t.CPUs / float64(t.GPUs)), -(t.MemBytes / float64(t.GPUs))}
	}
	sort.SliceStable(list, func(a, b int) bool {
		ka, kb := keys[list[a]], keys[list[b]]
		if ka.spans != kb.spans {
			return ka.spans < kb.spans
		}
		if ka.cpu != kb.cpu {
			return ka.cpu < kb.cpu
		}
		return ka.mem < kb.mem
	})
	var out []*placement
	fair := r.shape.Fair
	for _, p := range list {
		if p.reserved {
			continue
		}
		var here ServerAlloc
		for _, sa := range p.alloc.Servers {
			if sa.Server == srv {
				here = sa
			}
		}
		t := p.alloc.Total()
		share := float64(here.GPUs) / float64(t.GPUs)
		g := float64(here.GPUs)
		excess := [3]float64{
			max0(float64(t.GPUs)*share - g),
			max0(t.CPUs*share - fair.CPUs*g),
			max0(t.MemBytes*share - fair.MemBytes*g),
		}
		var diff [3]float64
		allZero, allPos := true, true
		for k := range diff {
			diff[k] = max0(need[k] - excess[k])
			if diff[k] != 0 {
				allZero = false
			}
			if !(diff[k] > 0) {
				allPos = false
			}
		}
		switch {
		case allZero:
			return append(out, p)
		case allPos:
			continue
		default:
			out = append(out, p)
			need = diff
		}
	}
	return out
}

// revert gives a peer its fair share (or its ideal, when that is no more
// than fair) on the GPUs it holds: Synergy deallocates it, rolls back the
// round's credit, and reallocates it at fair-share speed.
func (r *Round) revert(p *placement) {
	j := p.job
	t := p.alloc.Total()
	vec := p.demand.Ideal
	adjust := exceedsFair(vec, j.GPUs, r.shape)
	if adjust {
		vec = FairDemand(j, r.shape)
	}
	for _, sa := range p.alloc.Servers {
		r.give(sa)
	}
	for k, sa := range p.alloc.Servers {
		share := float64(sa.GPUs) / float64(t.GPUs)
		ns := ServerAlloc{Server: sa.Server, GPUs: sa.GPUs, CPUs: vec.CPUs * share, MemBytes: vec.MemBytes * share}
		p.alloc.Servers[k] = ns
		r.take(ns)
	}
	p.alloc.Speedup = 1
	p.alloc.Reverted = true
	if adjust {
		p.alloc.Demoted = true
	}
}
