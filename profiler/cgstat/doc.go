// Package cgstat samples a running job's cgroup for profiler/sample: a
// Sampler named "cgroup" reads the job's counter files through a
// runner/cgroupfs Reader (files kept open, pread at 10 Hz) and writes each
// counter that was read as a series ("cg_cpu_usage_s", "cg_mem_cache_bytes",
// ...; absent counters stay absent). It can hand every read to an observer,
// so that the profiler reads a point's cgroup once per tick for its
// timeline and its live memory figures alike. Reading and parsing the files
// is runner/cgroupfs's job.
package cgstat
