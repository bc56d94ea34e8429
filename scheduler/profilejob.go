package scheduler

import (
	"fmt"

	"github.com/synergy-sched/synergy/sensitivity"
)

// IdealFraction is how close to the best throughput a profiled job's ideal
// allocation must come: the smallest grid point reaching 95% of the best.
// Synergy's own tables were read off by hand; measured grids are noisy, and
// insisting on 100% would pick the largest allocation for a flat job.
const IdealFraction = 0.95

// JobFromProfile turns a profile (the output of `synergy profile`) into a
// job for a cluster of the given shape: the profile's matrix over the job's
// CPUs and memory is divided by its GPU count (per GPU) and normalised to
// the value at the cluster's fair share per GPU, so the GPU-proportional
// share is 1.0 as in Synergy's tables. Where the fair share lies outside
// the profiled range the value is clamped to the grid's edge — never
// extrapolated — and the job carries a warning saying so. The ideal
// allocation is the smallest grid point reaching IdealFraction of the best;
// IterSeconds is batch × GPUs over the samples/s at fair share. Iterations
// and arrival are the caller's.
func JobFromProfile(id int, p *sensitivity.Profile, s Shape) (*Job, error) {
	m, err := p.Matrix()
	if err != nil {
		return nil, fmt.Errorf("job %d from profile %q: %w", id, p.Job.Name, err)
	}
	gpus := p.Job.GPUs
	if gpus < 1 {
		gpus = 1
	}
	per := sensitivity.Matrix{
		CPUs:     make([]float64, len(m.CPUs)),
		MemBytes: make([]float64, len(m.MemBytes)),
		Values:   m.Values,
		Measured: m.Measured,
		Unit:     m.Unit,
		PerGPU:   true,
	}
	for i, c := range m.CPUs {
		per.CPUs[i] = c / float64(gpus)
	}
	for i, b := range m.MemBytes {
		per.MemBytes[i] = b / float64(gpus)
	}
	j := &Job{ID: id, Model: p.Job.Name, GPUs: gpus}
	ref, _ := per.At(s.Fair.CPUs, s.Fair.MemBytes)
	j.Warnings = append(j.Warnings, rangeWarnings(per, s)...)
	if !(ref > 0) {
		return nil, fmt.Errorf("job %d from profile %q: throughput at the fair share (%v CPUs, %s per GPU) is %v; cannot normalise", id, p.Job.Name, s.Fair.CPUs, gbs(s.Fair.MemBytes), ref)
	}
	norm, err := per.Normalized(s.Fair.CPUs, s.Fair.MemBytes)
	if err != nil {
		return nil, fmt.Errorf("job %d from profile %q: %w", id, p.Job.Name, err)
	}
	cpus, mem := norm.Smallest(IdealFraction)
	speed, _ := norm.At(cpus, mem)
	j.Matrix = &norm
	j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup = cpus, mem, speed
	if speed < 1 {
		// The grid's best is below the fair share (the fair point was
		// clamped): the fair share itself is the ideal.
		j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup = s.Fair.CPUs, s.Fair.MemBytes, 1
	}
	batch := p.Job.Batch
	if batch < 1 {
		return nil, fmt.Errorf("job %d from profile %q: job.batch = %d: need the per-GPU batch to turn samples/s into iteration time", id, p.Job.Name, batch)
	}
	j.IterSeconds = float64(batch*gpus) / ref
	j.Iterations = int64(p.Job.MaxIterations)
	if j.Iterations < 1 {
		j.Iterations = 1
	}
	return j, nil
}

// rangeWarnings says plainly when a profile's CPU or memory range per GPU
// does not reach the cluster's fair share (a profile taken on a small
// machine): throughput there is read at the nearest edge (Matrix.At clamps),
// never extrapolated, so speed-ups against the fair share are edge values.
func rangeWarnings(per sensitivity.Matrix, s Shape) []string {
	var out []string
	lo, hi := per.CPUs[0], per.CPUs[len(per.CPUs)-1]
	if s.Fair.CPUs > hi || s.Fair.CPUs < lo {
		out = append(out, fmt.Sprintf("profiled with %g–%g CPUs per GPU, but this cluster's GPU-proportional share is %g CPUs per GPU: "+
			"throughput outside the profiled CPUs is taken at the nearest measured edge, not extrapolated; profile on a machine with at least %g cores per GPU to trust its speed-up",
			lo, hi, s.Fair.CPUs, s.Fair.CPUs))
	}
	mlo, mhi := per.MemBytes[0], per.MemBytes[len(per.MemBytes)-1]
	if s.Fair.MemBytes > mhi || s.Fair.MemBytes < mlo {
		out = append(out, fmt.Sprintf("profiled with %s–%s of memory per GPU, but this cluster's GPU-proportional share is %s per GPU: "+
			"throughput outside that range is taken at the nearest measured edge, not extrapolated",
			gbs(mlo), gbs(mhi), gbs(s.Fair.MemBytes)))
	}
	return out
}
