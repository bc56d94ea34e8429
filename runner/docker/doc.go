// Package docker runs profiling jobs in containers on a Docker Engine: one
// container per profiling point, created from a local image (never pulled)
// with the point's limits in its HostConfig — cpuset and CFS quota, a memory
// limit with no swap, /dev/shm size, a read-bandwidth limit on the dataset's
// disk, GPUs through a device request — and removed when the job ends,
// fails or is cancelled. It is the only package that imports the moby
// client; it reads the container's cgroup files directly (runner/cgroupfs)
// for Stats, and builds FROM scratch images holding static binaries
// (synthtrain) through the Engine API.
//
// What the profiler passes in runner.Job, and what the container sees:
//
//   - Argv is the whole command, as for the local runner: Argv[0] names a
//     program inside the image (found on the image's PATH) and replaces the
//     image's ENTRYPOINT; Options.UseImageEntrypoint keeps the ENTRYPOINT
//     and passes Argv as its arguments instead. Argv is passed as an array,
//     never through a shell.
//   - DataDir (a host directory) is bind-mounted read-only at
//     Options.ContainerMnt (default /datadrive). Every argv element that is
//     DataDir or a path below it — bare ("--data", "/host/ds") or in
//     "--flag=/host/ds/x" form — is rewritten to the same path under the
//     mount point, so the profiler passes host paths unchanged.
//   - MetricsDir (a host directory) is bind-mounted read-write at
//     Options.MetricsMnt (default /synergy), and paths below it in argv and
//     in environment values are rewritten likewise: the profiler sets
//     SYNERGY_METRICS_FILE=<MetricsDir>/metrics.jsonl and the job appends to
//     /synergy/metrics.jsonl, which is the same file. SYNERGY_METRICS_FILE
//     outside MetricsDir is an error.
//   - ProbeDir (a host directory of code the job loads, the DataLoader
//     probe) is bind-mounted read-only at ProbeMnt (/synergy-probe), with
//     paths below it rewritten likewise; in PYTHONPATH, LD_LIBRARY_PATH and
//     PATH each ':'-separated element is rewritten on its own, and the
//     image's own PYTHONPATH is appended to the job's.
//   - Env is the container's environment on top of the image's; Dir is
//     ignored (the image's WORKDIR applies).
//   - Limits: see hostConfig. The daemon must run on this host: bind
//     mounts, the cpuset and the block device are host resources.
//
// Containers carry the labels synergy.profile=1, synergy.job=<Job.Name> and
// synergy.point=<limits>, so leftovers can be listed with
// `docker ps -a --filter label=synergy.profile`. A container that exits on
// its own takes its cgroup with it, so Result.Final is the last sample taken
// while it ran: exact when the job is ended by Stop or cancellation (a
// sample is read just before the kill), at most Options.StatsInterval old
// otherwise.
package docker
