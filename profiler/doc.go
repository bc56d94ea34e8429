// Package profiler runs the sweep that measures a training job's
// sensitivity to CPU and memory: it plans the points (the CPU axis with
// memory unlimited and the dataset warm, then the memory axis at the best
// CPU count from a cold page cache), launches the job once per point through
// a runner.Runner, tails the job's metrics stream (docs/job-contract.md),
// stops each point as soon as the 95% confidence half-width of samples/s is
// within the target, records failures by class, and saves the profile
// (sensitivity.Profile) atomically after every point. Subpackages sample the
// GPU (NVML), the host and the job's cgroup while a point runs.
package profiler
