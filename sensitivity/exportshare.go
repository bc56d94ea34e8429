package sensitivity

import "fmt"

// IdealFraction is how close to the best throughput an ideal allocation
// must come: the smallest grid point reaching 95% of the best. It serves
// the scheduler's jobs, the synergy-grid's ideal and the slurm and k8s
// exports alike. Synergy's own tables were read off by hand; measured
// grids are noisy, and insisting on 100% would pick the largest allocation
// for a flat job.
const IdealFraction = 0.95

// FairShareView is a profile as a GPU scheduler reads it on a cluster
// whose GPU-proportional share is FairCPUsPerGPU cores and
// FairMemBytesPerGPU bytes per GPU (Synergy's per_server_size_fair): the
// one derivation behind the scheduler's jobs (scheduler.JobFromProfile)
// and the synergy-grid and gavel exports.
type FairShareView struct {
	Name string
	// GPUs is the profiled job's GPU count (at least 1); Batch its per-GPU
	// batch.
	GPUs  int
	Batch int
	// PerGPU is the profile's matrix with both axes divided by GPUs, in
	// samples/s.
	PerGPU Matrix
	// ProfiledCPUs and ProfiledMemBytes are PerGPU's range per GPU: the
	// unlimited memory column at what the job used there
	// (Profile.UnlimitedMemBytes), or at the host's DRAM where the profile
	// does not record it. UnlimitedAtUsed says the last column is the
	// unlimited one standing at what the job used: more memory than that
	// reads the same, and is no clamping.
	ProfiledCPUs     [2]float64
	ProfiledMemBytes [2]float64
	UnlimitedAtUsed  bool
	// FairCPUsPerGPU and FairMemBytesPerGPU are the share read at.
	FairCPUsPerGPU     float64
	FairMemBytesPerGPU float64
	// FairSamplesPerS is PerGPU at the fair share; FairClamped is true when
	// that point lies outside the profiled range and was read at its
	// nearest edge (Matrix.At clamps; never extrapolated).
	FairSamplesPerS float64
	FairClamped     bool
	// Normalized is PerGPU divided by FairSamplesPerS: 1.0 at the fair
	// share, as Synergy's tables are.
	Normalized Matrix
	// IdealCPUsPerGPU and IdealMemBytesPerGPU are the smallest point of
	// Normalized reaching IdealFraction of its best, and Speedup the value
	// there. Where that point is measurably slower than the fair share
	// (AtFairShare), the fair share itself is the ideal, at speed-up 1, and
	// FellBack is true; where it is slower only within the noise, it stays
	// the ideal at speed-up 1.
	IdealCPUsPerGPU     float64
	IdealMemBytesPerGPU float64
	Speedup             float64
	FellBack            bool
	// Why says what the ideal is and why, in words: e.g. "0.5 CPUs, 0.45
	// GB: within noise of the share's 388 samples/s ..." or "2 CPUs, ...: 1
	// CPU reads 12 % slower than the best (beyond their ±3 %) ...".
	Why string
	// IterSeconds is seconds per iteration at the fair share: batch × GPUs
	// over FairSamplesPerS.
	IterSeconds float64
}

// AtFairShare reads p at a GPU-proportional share of fairCPUsPerGPU cores
// and fairMemBytesPerGPU bytes per GPU: the one demand rule for a profile,
// behind the scheduler's jobs (scheduler.JobFromProfile: schedule,
// simulate, the Kubernetes webhook and scheduler, slurm submit and place)
// and the synergy-grid and gavel exports. Every cell of p's grid must have
// a value (see Fill), and p must give the per-GPU batch. Errors name the
// profile field or the point that failed.
//
// The grid is read as demandGrid says (a cell measured beside other work
// does not decide on its own; the unlimited column stands at what the job
// used there). The ideal is the smallest cell (fewest CPUs, then least
// memory) reaching IdealFraction of the best. The job falls back to its
// share only where that cell is measurably slower than the share
// (measurablySlower: the difference beyond the two figures' 95%
// intervals combined, the share's interpolated as its value is); an ideal slower than the share within the noise keeps its smaller
// allocation at speed-up 1, as the measurement cannot tell it from the
// share. With every interval 0 this is the rule as it was: the share
// whenever the ideal reads below it.
func AtFairShare(p *Profile, fairCPUsPerGPU, fairMemBytesPerGPU float64) (*FairShareView, error) {
	dg, err := p.demandGrid()
	if err != nil {
		return nil, err
	}
	g := max(p.Job.GPUs, 1)
	dg.perGPU(g)
	m := dg.m
	if p.Job.Batch < 1 {
		return nil, fmt.Errorf("job.batch = %d: need the per-GPU batch to turn samples/s into iteration time", p.Job.Batch)
	}
	v := &FairShareView{Name: p.Job.Name, GPUs: g, Batch: p.Job.Batch, PerGPU: m,
		ProfiledCPUs:     [2]float64{m.CPUs[0], m.CPUs[len(m.CPUs)-1]},
		ProfiledMemBytes: [2]float64{m.MemBytes[0], m.MemBytes[len(m.MemBytes)-1]},
		UnlimitedAtUsed:  dg.memHow != "",
		FairCPUsPerGPU:   fairCPUsPerGPU, FairMemBytesPerGPU: fairMemBytesPerGPU}
	ref, inRange := m.At(fairCPUsPerGPU, fairMemBytesPerGPU)
	if !(ref > 0) {
		return nil, fmt.Errorf("throughput at the fair share (%g CPUs, %s per GPU) is %v; cannot normalise", fairCPUsPerGPU, gb(fairMemBytesPerGPU), ref)
	}
	if !inRange && v.UnlimitedAtUsed && fairMemBytesPerGPU > m.MemBytes[len(m.MemBytes)-1] {
		_, inRange = m.At(fairCPUsPerGPU, m.MemBytes[len(m.MemBytes)-1])
	}
	v.FairSamplesPerS, v.FairClamped = ref, !inRange
	v.IterSeconds = float64(v.Batch*g) / ref
	if v.Normalized, err = m.Normalized(fairCPUsPerGPU, fairMemBytesPerGPU); err != nil {
		return nil, err
	}
	i, j := dg.smallest(v.Normalized.Values, ref, IdealFraction)
	v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU, v.Speedup = m.CPUs[i], m.MemBytes[j], v.Normalized.Values[i][j]
	best, bi, bj := m.Max()
	bestCI := dg.ciAt(bi, bj)
	ideal, idealCI, refCI := m.Values[i][j], dg.ci[i][j], dg.ciAt(fairCPUsPerGPU, fairMemBytesPerGPU)
	why := dg.idealWhy(i, j, best, bestCI)
	if ideal < IdealFraction*best {
		why += fmt.Sprintf("; %s reads %s below the best, but was read beside other work, and the most it can be (%s samples/s) reaches 95 %% of it",
			allocText(v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU), pct(1-ideal/best), num3(dg.up[i][j]))
	}
	if v.Speedup < 1 {
		slower, diff, comb := measurablySlower(ideal, idealCI, ref, refCI)
		// The share's test is on the normalised value, as it always was,
		// so that a noiseless grid falls back exactly where it did.
		if comb == 0 || slower {
			v.Why = fmt.Sprintf("the share (%s): %s, the smallest reaching 95 %% of the best, reads %s slower than the share's %s samples/s (beyond their ±%s)",
				allocText(fairCPUsPerGPU, fairMemBytesPerGPU), allocText(v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU), pct(diff/ref), num3(ref), pct(comb/ref))
			v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU, v.Speedup, v.FellBack = fairCPUsPerGPU, fairMemBytesPerGPU, 1, true
		} else {
			v.Why = fmt.Sprintf("%s: within noise of the share's %s samples/s (%s slower, their ±%s); %s",
				allocText(v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU), num3(ref), pct(diff/ref), pct(comb/ref), why)
			v.Speedup = 1
		}
	} else {
		v.Why = fmt.Sprintf("%s: %s; %.2f× the share's %s samples/s", allocText(v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU), why, v.Speedup, num3(ref))
	}
	if !v.FellBack && dg.memHow != "" && j == len(m.MemBytes)-1 {
		v.Why += "; memory " + dg.memHow
	}
	if dg.note != "" {
		v.Why += "; " + dg.note
	}
	return v, nil
}

// smallestReaching is the ideal allocation of a normalised matrix: its
// smallest grid point reaching IdealFraction of the best, and the value
// there.
func smallestReaching(m *Matrix) (cpus, memBytes, value float64) {
	cpus, memBytes = m.Smallest(IdealFraction)
	value, _ = m.At(cpus, memBytes)
	return cpus, memBytes, value
}
