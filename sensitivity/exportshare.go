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
	// ProfiledCPUs and ProfiledMemBytes are PerGPU's range per GPU
	// (unlimited memory at the host's DRAM).
	ProfiledCPUs     [2]float64
	ProfiledMemBytes [2]float64
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
	// there. Where the best is below the fair share (the fair point was
	// clamped), the fair share itself is the ideal, at speed-up 1.
	IdealCPUsPerGPU     float64
	IdealMemBytesPerGPU float64
	Speedup             float64
	// IterSeconds is seconds per iteration at the fair share: batch × GPUs
	// over FairSamplesPerS.
	IterSeconds float64
}

// AtFairShare reads p at a GPU-proportional share of fairCPUsPerGPU cores
// and fairMemBytesPerGPU bytes per GPU. Every cell of p's grid must have a
// value (see Fill), and p must give the per-GPU batch. Errors name the
// profile field or the point that failed.
func AtFairShare(p *Profile, fairCPUsPerGPU, fairMemBytesPerGPU float64) (*FairShareView, error) {
	m, err := p.Matrix()
	if err != nil {
		return nil, err
	}
	g := max(p.Job.GPUs, 1)
	for i := range m.CPUs {
		m.CPUs[i] /= float64(g)
	}
	for i := range m.MemBytes {
		m.MemBytes[i] /= float64(g)
	}
	m.PerGPU = true
	if p.Job.Batch < 1 {
		return nil, fmt.Errorf("job.batch = %d: need the per-GPU batch to turn samples/s into iteration time", p.Job.Batch)
	}
	v := &FairShareView{Name: p.Job.Name, GPUs: g, Batch: p.Job.Batch, PerGPU: m,
		ProfiledCPUs:     [2]float64{m.CPUs[0], m.CPUs[len(m.CPUs)-1]},
		ProfiledMemBytes: [2]float64{m.MemBytes[0], m.MemBytes[len(m.MemBytes)-1]},
		FairCPUsPerGPU:   fairCPUsPerGPU, FairMemBytesPerGPU: fairMemBytesPerGPU}
	ref, inRange := m.At(fairCPUsPerGPU, fairMemBytesPerGPU)
	if !(ref > 0) {
		return nil, fmt.Errorf("throughput at the fair share (%g CPUs, %s per GPU) is %v; cannot normalise", fairCPUsPerGPU, gb(fairMemBytesPerGPU), ref)
	}
	v.FairSamplesPerS, v.FairClamped = ref, !inRange
	v.IterSeconds = float64(v.Batch*g) / ref
	if v.Normalized, err = m.Normalized(fairCPUsPerGPU, fairMemBytesPerGPU); err != nil {
		return nil, err
	}
	v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU, v.Speedup = smallestReaching(&v.Normalized)
	if v.Speedup < 1 {
		v.IdealCPUsPerGPU, v.IdealMemBytesPerGPU, v.Speedup = fairCPUsPerGPU, fairMemBytesPerGPU, 1
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
