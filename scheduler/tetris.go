package scheduler

import "fmt"

// Tetris is Synergy's TETRIS scheduler (simulator/schedulers/tetris.py)
// with the Tetris paper's packing added. Order: every round the jobs are
// taken by remaining work weighted by their demand, smallest first —
// Σ_r demand_r/cluster_r × remaining seconds over GPUs, CPUs and memory,
// the remaining seconds at the job's last speed-up (Synergy's
// get_remaining_weighted_duration; Tetris's SRTF-like term, Grandl et al.,
// SIGCOMM'14 §3.3). Placement: among the servers that fit, the one whose
// free resources best align with the demand — alignment score
// Σ_r (demand_r/capacity_r)·(free_r/capacity_r), Tetris §3.1, range
// [0, 3] — where Synergy's TETRIS places first-fit by GPU index.
//
// "tetris" places the ideal demand or leaves the job waiting (Synergy's
// TETRIS without +tune is greedy); "tetris+tune" falls back to the fair
// share, then to TUNE's peer reverting.
type Tetris struct {
	Tune bool
}

func (t Tetris) Name() string { return withTune("tetris", t.Tune) }

// FairRates implements Strategy: Synergy runs TETRIS without `fair`.
func (Tetris) FairRates() bool { return false }

// RemainingWeightedSeconds is Tetris's ordering key for a job with ideal
// demand d on a cluster of total resources: Σ_r d_r/total_r × remaining
// seconds (at the last speed-up, or at fair share when fairRates). Units:
// seconds; range [0, 3 × remaining seconds] for a demand that fits.
func RemainingWeightedSeconds(a *Active, d Resources, total Resources, fairRates bool) float64 {
	dur := a.RemainingSeconds(fairRates)
	w := 0.0
	if total.GPUs > 0 {
		w += float64(d.GPUs) / float64(total.GPUs)
	}
	if total.CPUs > 0 {
		w += d.CPUs / total.CPUs
	}
	if total.MemBytes > 0 {
		w += d.MemBytes / total.MemBytes
	}
	return w * dur
}

// Reorder implements Orderer: least weighted remaining work first.
func (t Tetris) Reorder(offer []*Active, c *Cluster, ctx OrderContext) []*Active {
	total, shape := c.Totals(), ShapeOf(c)
	return reorderBy(offer, func(a *Active) float64 {
		return RemainingWeightedSeconds(a, IdealDemand(a.Job, shape).Ideal, total, t.FairRates())
	})
}

// AlignmentScore is the Tetris alignment of one GPU's share per with server
// i's free resources: Σ_r (per_r/cap_r)·(free_r/cap_r) over GPUs, CPUs and
// memory, each normalised by the server's capacity. Range [0, 3]; larger
// means the server has more of what the job asks for.
func (r *Round) AlignmentScore(i int, per PerGPU) float64 {
	s := r.cluster.Servers[i]
	f := r.Free(i)
	g, c, m := float64(s.GPUs), s.CPUs, float64(s.MemBytes)
	return (1/g)*(float64(f.GPUs)/g) + (per.CPUs/c)*(f.CPUs/c) + (per.MemBytes/m)*(f.MemBytes/m)
}

// Place implements Strategy.
func (t Tetris) Place(r *Round, j *Job) Decision {
	d := IdealDemand(j, r.shape)
	per := perGPUOf(d.Ideal)
	score := func(i int, _ Resources) float64 { return r.AlignmentScore(i, per) }
	if servers, ok := r.placeRanked(per, j.GPUs, score); ok {
		note := fmt.Sprintf("ideal demand on the best-aligned server (score %.3g)", score(servers[0].Server, Resources{}))
		p := r.commit(j, d, servers, d.Speedup, false)
		return Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: note}
	}
	short := r.explain(per, j.GPUs)
	if !t.Tune {
		return Decision{JobID: j.ID, Note: "ideal demand did not fit", Shortfalls: short}
	}
	if exceedsFair(d.Ideal, j.GPUs, r.shape) {
		fair := r.shape.Fair
		fscore := func(i int, _ Resources) float64 { return r.AlignmentScore(i, fair) }
		if servers, ok := r.placeRanked(fair, j.GPUs, fscore); ok {
			p := r.commit(j, d, servers, 1, true)
			return Decision{JobID: j.ID, Placed: true, Allocation: &p.alloc, Note: "dropped to fair share: ideal demand did not fit", Shortfalls: short}
		}
	}
	// TUNE's last step: revert peers to their fair share to make room.
	return Tune{}.Place(r, j)
}
