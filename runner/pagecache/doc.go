// Package pagecache controls and measures how much of a dataset sits in the
// OS page cache: Evict drops a directory's files from it
// (posix_fadvise(POSIX_FADV_DONTNEED) per file), Resident counts the cached
// bytes (mmap + mincore per file), Warm reads every file once, and
// ColdReadMBPerS measures the host's cold sequential read bandwidth.
//
// Eviction matters for memory profiling: a page is charged to the memory
// cgroup that first brought it into the cache, and pages cached by another
// cgroup (an earlier point, the profiler itself, the data generator) are
// NOT charged to a new job's cgroup. A job limited to 64 MiB read a
// pre-cached 512 MiB file at 9.5 GB/s on this machine kind. Every cold
// profiling point must therefore evict the dataset first, and check with
// Resident that the eviction took.
//
// It uses golang.org/x/sys/unix only.
package pagecache
