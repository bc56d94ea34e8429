// Package host samples the machine as a whole and describes it, and is the
// only package that imports gopsutil (v4). Sampler writes, each tick:
// host_cpu_pct (busy share of all logical CPUs since the previous tick, 0–100;
// absent on the first tick), host_mem_used_bytes, host_mem_available_bytes,
// host_mem_cache_bytes (page cache + buffers) and host_disk_read_bytes (a
// cumulative counter) for the block device holding Options.DiskPath, or for
// every physical disk when no path is given or the path has no block device
// (tmpfs, overlay); DiskScope says which and why. Info fills the profile's
// host block: hostname, CPU model, logical CPUs and DRAM bytes.
//
// /proc and /sys are injectable (Options.ProcRoot, Options.SysRoot), passed
// to gopsutil through its context environment, never through process-wide
// variables.
package host
