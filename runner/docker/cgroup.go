package docker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/synergy-sched/synergy/runner"
)

// UnifiedKey is the CgroupPaths key of a cgroup v2 directory. On cgroup v1
// the keys are the controller names ("memory", "cpu", "cpuacct", "cpuset",
// "blkio", "pids").
const UnifiedKey = "unified"

// cgroupDirs turns the contents of /proc/PID/cgroup into the process's cgroup
// directories under cgroupRoot (normally /sys/fs/cgroup). When the memory
// controller is on a v1 hierarchy the v1 controllers are returned (a hybrid
// host's near-empty unified tree is ignored); otherwise the unified
// directory, under UnifiedKey. A pure function.
//
// v1 controllers are looked up as cgroupRoot/<controller>: co-mounted
// hierarchies ("cpu,cpuacct") are reached through the symlinks distributions
// create for each controller name.
func cgroupDirs(procCgroup, cgroupRoot string) (map[string]string, error) {
	v1 := map[string]string{}
	unified, haveUnified := "", false
	for i, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("/proc/PID/cgroup line %d %q: want ID:CONTROLLERS:PATH", i+1, line)
		}
		ctrls, p := parts[1], parts[2]
		if ctrls == "" {
			unified, haveUnified = p, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			switch c {
			case "cpu", "cpuacct", "cpuset", "memory", "blkio", "pids":
				v1[c] = filepath.Join(cgroupRoot, c, p)
			}
		}
	}
	if _, ok := v1["memory"]; ok {
		return v1, nil
	}
	if haveUnified {
		return map[string]string{UnifiedKey: filepath.Join(cgroupRoot, unified)}, nil
	}
	return nil, errors.New("/proc/PID/cgroup names neither a v1 memory controller nor a unified hierarchy")
}

// readCgroupStats reads a container's counters from its cgroup directories
// (as returned by cgroupDirs). A missing blkio/io file counts as no reads; a
// missing memory directory means the container is gone and is an error.
func readCgroupStats(dirs map[string]string, now time.Time) (runner.Stats, error) {
	if d, ok := dirs[UnifiedKey]; ok {
		return readV2(d, now)
	}
	return readV1(dirs, now)
}

func readV1(dirs map[string]string, now time.Time) (runner.Stats, error) {
	s := runner.Stats{Time: now}
	mem := dirs["memory"]
	if mem == "" {
		return s, errors.New("no memory cgroup")
	}
	if _, err := os.Stat(mem); err != nil {
		return s, fmt.Errorf("read cgroup stats: %w", err)
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	if d := dirs["cpuacct"]; d != "" {
		ns, err := readUint(filepath.Join(d, "cpuacct.usage"))
		keep(err)
		s.CPUUsageSeconds = float64(ns) / 1e9
	}
	if d := dirs["cpu"]; d != "" {
		kv, err := readKV(filepath.Join(d, "cpu.stat"))
		keep(err)
		s.CPUPeriods = kv["nr_periods"]
		s.CPUThrottledPeriods = kv["nr_throttled"]
		s.CPUThrottledSeconds = float64(kv["throttled_time"]) / 1e9
	}

	u, err := readUint(filepath.Join(mem, "memory.usage_in_bytes"))
	keep(err)
	s.MemUsageBytes = int64(u)
	u, err = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
	keep(err)
	s.MemPeakBytes = int64(u)
	kv, err := readKV(filepath.Join(mem, "memory.stat"))
	keep(err)
	s.MemCacheBytes = int64(firstOf(kv, "total_cache", "cache"))
	s.MemAnonBytes = int64(firstOf(kv, "total_rss", "rss"))
	kv, err = readKV(filepath.Join(mem, "memory.oom_control"))
	keep(err)
	s.OOMEvents = kv["oom_kill"]

	if d := dirs["blkio"]; d != "" {
		n, err := readBlkioRead(filepath.Join(d, "blkio.throttle.io_service_bytes_recursive"))
		if errors.Is(err, os.ErrNotExist) {
			n, err = readBlkioRead(filepath.Join(d, "blkio.throttle.io_service_bytes"))
		}
		if !errors.Is(err, os.ErrNotExist) {
			keep(err)
		}
		s.IOReadBytes = n
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("read cgroup v1 stats: %w", errors.Join(errs...))
	}
	return s, nil
}

func readV2(dir string, now time.Time) (runner.Stats, error) {
	s := runner.Stats{Time: now}
	if _, err := os.Stat(dir); err != nil {
		return s, fmt.Errorf("read cgroup stats: %w", err)
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	kv, err := readKV(filepath.Join(dir, "cpu.stat"))
	keep(err)
	s.CPUUsageSeconds = float64(kv["usage_usec"]) / 1e6
	s.CPUPeriods = kv["nr_periods"]
	s.CPUThrottledPeriods = kv["nr_throttled"]
	s.CPUThrottledSeconds = float64(kv["throttled_usec"]) / 1e6

	u, err := readUint(filepath.Join(dir, "memory.current"))
	keep(err)
	s.MemUsageBytes = int64(u)
	u, err = readUint(filepath.Join(dir, "memory.peak")) // Linux 5.19+
	if !errors.Is(err, os.ErrNotExist) {
		keep(err)
	}
	s.MemPeakBytes = int64(u)
	kv, err = readKV(filepath.Join(dir, "memory.stat"))
	keep(err)
	s.MemCacheBytes = int64(kv["file"])
	s.MemAnonBytes = int64(kv["anon"])
	kv, err = readKV(filepath.Join(dir, "memory.events"))
	keep(err)
	s.OOMEvents = kv["oom_kill"]

	n, err := readIOStatRead(filepath.Join(dir, "io.stat"))
	if !errors.Is(err, os.ErrNotExist) {
		keep(err)
	}
	s.IOReadBytes = n
	if len(errs) > 0 {
		return s, fmt.Errorf("read cgroup v2 stats: %w", errors.Join(errs...))
	}
	return s, nil
}

// statsFromAPI converts the Engine's stats document (GET
// /containers/ID/stats) into Stats, for daemons whose cgroups this process
// cannot read. The API carries no OOM-kill counter on v1.
func statsFromAPI(r container.StatsResponse, now time.Time) runner.Stats {
	s := runner.Stats{Time: now}
	s.CPUUsageSeconds = float64(r.CPUStats.CPUUsage.TotalUsage) / 1e9
	s.CPUPeriods = r.CPUStats.ThrottlingData.Periods
	s.CPUThrottledPeriods = r.CPUStats.ThrottlingData.ThrottledPeriods
	s.CPUThrottledSeconds = float64(r.CPUStats.ThrottlingData.ThrottledTime) / 1e9
	m := r.MemoryStats
	s.MemUsageBytes = int64(m.Usage)
	s.MemPeakBytes = int64(m.MaxUsage)
	s.MemCacheBytes = int64(firstOf(m.Stats, "total_cache", "cache", "file"))
	s.MemAnonBytes = int64(firstOf(m.Stats, "total_rss", "rss", "anon"))
	s.OOMEvents = m.Stats["oom_kill"]
	for _, e := range r.BlkioStats.IoServiceBytesRecursive {
		if strings.EqualFold(e.Op, "read") {
			s.IOReadBytes += int64(e.Value)
		}
	}
	return s
}

func firstOf(kv map[string]uint64, keys ...string) uint64 {
	for _, k := range keys {
		if v, ok := kv[k]; ok {
			return v
		}
	}
	return 0
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	t := strings.TrimSpace(string(b))
	if t == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a counter", path, t)
	}
	return v, nil
}

// readKV reads a flat-keyed cgroup file ("key value" per line).
func readKV(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseKV(f, path)
}

func parseKV(f io.Reader, path string) (map[string]uint64, error) {
	kv := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return kv, fmt.Errorf("%s line %d: %q is not a counter", path, n, fields[1])
		}
		kv[fields[0]] = v
	}
	return kv, sc.Err()
}

// readBlkioRead sums the "MAJ:MIN Read N" lines of a v1 io_service_bytes file.
func readBlkioRead(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseBlkioRead(string(b), path)
}

func parseBlkioRead(text, path string) (int64, error) {
	var sum int64
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "Read" {
			continue
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s line %d: %q is not a counter", path, n+1, f[2])
		}
		sum += v
	}
	return sum, nil
}

// readIOStatRead sums rbytes= over the devices of a v2 io.stat file.
func readIOStatRead(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseIOStatRead(string(b), path)
}

func parseIOStatRead(text, path string) (int64, error) {
	var sum int64
	for n, line := range strings.Split(text, "\n") {
		for _, f := range strings.Fields(line) {
			v, ok := strings.CutPrefix(f, "rbytes=")
			if !ok {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s line %d: %q is not a counter", path, n+1, v)
			}
			sum += x
		}
	}
	return sum, nil
}
