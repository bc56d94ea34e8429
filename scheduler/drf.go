package scheduler

import "fmt"

// DRF is Synergy's DRF scheduler (simulator/schedulers/drf.py): every round
// the jobs are taken in order of the dominant share of their demand vector
// — max(GPUs/cluster GPUs, CPUs/cluster CPUs, memory/cluster memory) of the
// job's ideal demand (IdealDemand), smallest first, Ghodsi et al.'s
// progressive filling (NSDI'11 §4) with each job as its own user — and
// placed first-fit by GPU index. Ties keep the policy's order (Synergy
// breaks them by arrival: FIFO).
//
// "drf" places the ideal demand or leaves the job waiting (Synergy's
// DRF-Greedy: neither +fair nor +tune); "drf+tune" places as TUNE does
// (ideal, else fair share, else revert peers).
type DRF struct {
	Tune bool
}

func (d DRF) Name() string { return withTune("drf", d.Tune) }

// FairRates implements Strategy: Synergy runs DRF without `fair`.
func (DRF) FairRates() bool { return false }

// LargestFirst implements LargestFirst: off, as in the original's DRF.
func (DRF) LargestFirst() bool { return false }

// withTune names a strategy's variant that places as TUNE does.
func withTune(name string, tune bool) string {
	if tune {
		return name + "+tune"
	}
	return name
}

// DominantShare is a demand's largest fraction of the cluster's totals, in
// [0, 1] for a demand that fits the cluster.
func DominantShare(d Resources, total Resources) float64 {
	s := 0.0
	if total.GPUs > 0 {
		s = float64(d.GPUs) / float64(total.GPUs)
	}
	if total.CPUs > 0 {
		s = max(s, d.CPUs/total.CPUs)
	}
	if total.MemBytes > 0 {
		s = max(s, d.MemBytes/total.MemBytes)
	}
	return s
}

// Reorder implements Orderer: smallest dominant share first.
func (DRF) Reorder(offer []*Active, c *Cluster, _ OrderContext) []*Active {
	total, shape := c.Totals(), ShapeOf(c)
	return reorderBy(offer, func(a *Active) float64 { return DominantShare(IdealDemand(a.Job, shape).Ideal, total) })
}

// Place implements Strategy.
func (d DRF) Place(r *Round, j *Job) Decision {
	var dec Decision
	if d.Tune {
		dec = Tune{}.Place(r, j)
	} else {
		dec = Greedy{}.Place(r, j)
	}
	share := DominantShare(IdealDemand(j, r.shape).Ideal, r.cluster.Totals())
	dec.Note = fmt.Sprintf("dominant share %.4g: %s", share, dec.Note)
	return dec
}

func (d DRF) placeQuiet(r *Round, j *Job) bool {
	if d.Tune {
		return Tune{}.placeQuiet(r, j)
	}
	return Greedy{}.placeQuiet(r, j)
}
