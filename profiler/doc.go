// Package profiler runs the sweep that measures a training job's
// sensitivity to CPU and memory. A profile is one launch of the job
// through a runner.Runner: the planner (plan.go) picks the next point
// from what the recorder (recorder.go) holds so far — the CPU axis with
// memory unlimited and the dataset warm, then the memory axis, lowered,
// from an evicted page cache; the launcher (launch.go, move.go,
// measure.go) changes the running job in place for it (its cgroup's
// limits, its loader's workers over the control channel of
// docs/job-contract.md, the dataset's page cache) or relaunches it,
// saying why; the meter (point.go) decides which iterations of the
// job's metrics stream measure the point and stops it once the 95%
// confidence half-width of samples/s is within the target; and the
// recorder saves the profile (sensitivity.Profile) atomically after
// every point, failures recorded by class. Subpackages sample the GPU
// (NVML), the host and the job's cgroup while a point runs.
package profiler
