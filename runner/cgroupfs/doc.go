// Package cgroupfs owns synergy's reading of cgroup and sysfs files: where a
// process's cgroups are (PathsOf, from /proc/<pid>/cgroup and the mount
// table), how cgroups are mounted (DetectMode: v1, hybrid, v2), a group's
// counters (Open and ReadStats, into runner.Stats), and the disk that holds
// a path (DiskOf, DiskName), for read throttling. Both runners and the
// profiler's cgroup sampler use it; it imports no cgroup library (only
// runner/local imports containerd/cgroups, to create and limit groups).
//
// # Paths
//
// A paths map, as runner.Handle.CgroupPaths returns it, holds a directory
// per v1 controller ("cpu", "cpuacct" or "cpu,cpuacct", "memory", "blkio",
// ...) and, under KeyUnified, the cgroup v2 directory. Every host path is
// injectable (procRoot, sysRoot, cgroupRoot).
//
// # Counters
//
// Open opens each counter file once and keeps it open; every Read preads
// the files from offset 0, which regenerates a cgroup file (BenchmarkReadFile
// on the 2-core test VM: 6.7 µs per memory.stat read kept open, 16.6 µs
// re-opening it), and parses them with small pure functions:
//
//	counter             v1 file (field)                              v2 file (field)
//	CPUUsageSeconds     cpuacct.usage (ns)                           cpu.stat usage_usec
//	CPUPeriods          cpu.stat nr_periods                          cpu.stat nr_periods
//	CPUThrottled*       cpu.stat nr_throttled, throttled_time        cpu.stat nr_throttled, throttled_usec
//	MemUsageBytes       memory.usage_in_bytes                        memory.current
//	MemPeakBytes        memory.max_usage_in_bytes                    memory.peak
//	MemCacheBytes       memory.stat total_cache                      memory.stat file
//	MemAnonBytes        memory.stat total_rss                        memory.stat anon
//	OOMEvents           memory.oom_control oom_kill                  memory.events oom_kill
//	IOReadBytes         blkio.throttle.io_service_bytes[_recursive]  io.stat rbytes
//
// v1 files are preferred where both exist (a hybrid host's unified tree
// holds no controllers). Absent is not zero: a file the kernel does not
// offer (memory.peak before Linux 5.19, io.stat without the io controller)
// is left out at Open and its counter is absent from runner.Stats.Has
// (Reader.Missing lists it). On v1, recent kernels (6.x here) account a
// device in blkio.throttle.io_service_bytes only once a throttle rule is set
// on it; a file with no device line therefore gives no IOReadBytes at all
// rather than a misleading 0. A file that exists but does not parse is an
// error naming the file and line; the counters read are still returned.
package cgroupfs
