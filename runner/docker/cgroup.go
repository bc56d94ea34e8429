package docker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// cgroupPaths finds a container's cgroup directories from its init
// process's pid (cgroupfs.PathsOf). On a hybrid host (memory on v1) the
// unified entry is dropped: that tree holds no controllers and the
// container sits at its root. It fails when neither a v1 memory directory
// nor a unified one is found; the handle then reads the stats API.
func cgroupPaths(procRoot string, pid int) (map[string]string, error) {
	dirs, err := cgroupfs.PathsOf(procRoot, pid)
	if err != nil {
		return nil, err
	}
	if _, ok := dirs[cgroupfs.KeyMemory]; ok {
		delete(dirs, cgroupfs.KeyUnified)
		return dirs, nil
	}
	if _, ok := dirs[cgroupfs.KeyUnified]; ok {
		return dirs, nil
	}
	return nil, fmt.Errorf("cgroups of pid %d: neither a v1 memory controller nor a unified hierarchy", pid)
}

// readCgroupStats reads a container's counters from its cgroup directories
// (cgroupfs.ReadStats). A read without memory usage means the cgroup went
// with the container and is an error, so that the last counters read while
// it ran are kept.
func readCgroupStats(dirs map[string]string, now time.Time) (runner.Stats, error) {
	s, err := cgroupfs.ReadStats(dirs, now)
	if err != nil {
		return s, fmt.Errorf("read cgroup stats: %w", err)
	}
	if s.Has&runner.StatMemUsage == 0 {
		return s, errors.New("read cgroup stats: no memory usage: the container's cgroup is gone")
	}
	return s, nil
}

// statsFromAPI converts the Engine's stats document (GET
// /containers/ID/stats) into Stats, for daemons whose cgroups this process
// cannot read. The document carries no peak on v2 and no OOM-kill counter
// on v1; memory split and OOM kills count only where their keys are there.
func statsFromAPI(r container.StatsResponse, now time.Time) runner.Stats {
	s := runner.Stats{Time: now, Has: runner.StatCPUUsage | runner.StatCPUPeriods | runner.StatCPUThrottledPeriods |
		runner.StatCPUThrottledSeconds | runner.StatMemUsage | runner.StatIORead}
	s.CPUUsageSeconds = float64(r.CPUStats.CPUUsage.TotalUsage) / 1e9
	s.CPUPeriods = r.CPUStats.ThrottlingData.Periods
	s.CPUThrottledPeriods = r.CPUStats.ThrottlingData.ThrottledPeriods
	s.CPUThrottledSeconds = float64(r.CPUStats.ThrottlingData.ThrottledTime) / 1e9
	m := r.MemoryStats
	s.MemUsageBytes = int64(m.Usage)
	if m.MaxUsage > 0 {
		s.MemPeakBytes, s.Has = int64(m.MaxUsage), s.Has|runner.StatMemPeak
	}
	if v, ok := firstOf(m.Stats, "total_cache", "cache", "file"); ok {
		s.MemCacheBytes, s.Has = int64(v), s.Has|runner.StatMemCache
	}
	if v, ok := firstOf(m.Stats, "total_rss", "rss", "anon"); ok {
		s.MemAnonBytes, s.Has = int64(v), s.Has|runner.StatMemAnon
	}
	if v, ok := m.Stats["oom_kill"]; ok {
		s.OOMEvents, s.Has = v, s.Has|runner.StatOOMEvents
	}
	for _, e := range r.BlkioStats.IoServiceBytesRecursive {
		if strings.EqualFold(e.Op, "read") {
			s.IOReadBytes += int64(e.Value)
		}
	}
	return s
}

// firstOf returns the value of the first of keys in kv.
func firstOf(kv map[string]uint64, keys ...string) (uint64, bool) {
	for _, k := range keys {
		if v, ok := kv[k]; ok {
			return v, true
		}
	}
	return 0, false
}
