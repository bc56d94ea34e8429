package scheduler

import (
	"fmt"

	"github.com/synergy-sched/synergy/sensitivity"
)

// JobFromProfile turns a profile (the output of `synergy profile`) into a
// job for a cluster of the given shape, by sensitivity.AtFairShare, the one
// demand rule for a profile (shared by schedule, simulate, the Kubernetes
// webhook and scheduler, and slurm submit and place; the synergy-grid and
// gavel exports read its fair-share figures): the profile's matrix per GPU, normalised to the value at the
// cluster's fair share per GPU, so the GPU-proportional share is 1.0 as in
// Synergy's tables; the ideal allocation is the smallest grid point
// reaching sensitivity.IdealFraction of the best, the share only where
// that point is measurably slower than the share (beyond the two figures'
// intervals), and IdealWhy says which and why; IterSeconds is batch × GPUs
// over the samples/s at fair share. Where the fair share lies outside the
// profiled range the value is clamped to the grid's edge — never
// extrapolated — and the job carries a warning saying so (memory above an
// unlimited column placed at what the job used there is not clamping: the
// job had all it wanted). Iterations are the profile's max_iterations (at
// least 1); arrival is the caller's.
func JobFromProfile(id int, p *sensitivity.Profile, s Shape) (*Job, error) {
	v, err := sensitivity.AtFairShare(p, s.Fair.CPUs, s.Fair.MemBytes)
	if err != nil {
		return nil, fmt.Errorf("job %d from profile %q: %w", id, p.Job.Name, err)
	}
	return &Job{
		ID: id, Model: v.Name, GPUs: v.GPUs,
		Iterations:      max(int64(p.Job.MaxIterations), 1),
		IterSeconds:     v.IterSeconds,
		Matrix:          &v.Normalized,
		Warnings:        rangeWarnings(v, s),
		IdealCPUsPerGPU: v.IdealCPUsPerGPU, IdealMemBytesPerGPU: v.IdealMemBytesPerGPU, Speedup: v.Speedup,
		IdealWhy: v.Why,
	}, nil
}

// rangeWarnings says plainly when a profile's CPU or memory range per GPU
// does not reach the cluster's fair share (a profile taken on a small
// machine): throughput there is read at the nearest edge (Matrix.At clamps),
// never extrapolated, so speed-ups against the fair share are edge values.
func rangeWarnings(v *sensitivity.FairShareView, s Shape) []string {
	var out []string
	if lo, hi := v.ProfiledCPUs[0], v.ProfiledCPUs[1]; s.Fair.CPUs > hi || s.Fair.CPUs < lo {
		out = append(out, fmt.Sprintf("profiled with %g–%g CPUs per GPU, but this cluster's GPU-proportional share is %g CPUs per GPU: "+
			"throughput outside the profiled CPUs is taken at the nearest measured edge, not extrapolated; profile on a machine with at least %g cores per GPU to trust its speed-up",
			lo, hi, s.Fair.CPUs, s.Fair.CPUs))
	}
	if lo, hi := v.ProfiledMemBytes[0], v.ProfiledMemBytes[1]; (s.Fair.MemBytes > hi && !v.UnlimitedAtUsed) || s.Fair.MemBytes < lo {
		out = append(out, fmt.Sprintf("profiled with %s–%s of memory per GPU, but this cluster's GPU-proportional share is %s per GPU: "+
			"throughput outside that range is taken at the nearest measured edge, not extrapolated",
			gbs(lo), gbs(hi), gbs(s.Fair.MemBytes)))
	}
	return out
}
