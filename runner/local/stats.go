package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/runner"
)

// parseKeyed parses a flat keyed file ("key value" per line: cpu.stat,
// memory.stat, memory.oom_control, memory.events). Lines whose value is not
// an unsigned integer are skipped.
func parseKeyed(content string) map[string]uint64 {
	out := map[string]uint64{}
	s := bufio.NewScanner(strings.NewReader(content))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// parseBlkioReadBytes sums the "MAJ:MIN Read N" lines of a v1
// blkio.throttle.io_service_bytes file.
func parseBlkioReadBytes(content string) int64 {
	var sum int64
	s := bufio.NewScanner(strings.NewReader(content))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) == 3 && f[1] == "Read" {
			if v, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// parseIOStatReadBytes sums the rbytes= fields of a v2 io.stat file
// ("MAJ:MIN rbytes=N wbytes=N rios=N ...").
func parseIOStatReadBytes(content string) int64 {
	var sum int64
	s := bufio.NewScanner(strings.NewReader(content))
	for s.Scan() {
		for _, kv := range strings.Fields(s.Text()) {
			if v, ok := strings.CutPrefix(kv, "rbytes="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					sum += n
				}
			}
		}
	}
	return sum
}

// statReader reads cgroup files where a missing file (controller absent,
// older kernel) reads as empty and any other failure is kept.
type statReader struct{ errs []error }

func (r *statReader) read(dir, name string) string {
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.errs = append(r.errs, fmt.Errorf("read %s: %w", name, err))
		}
		return ""
	}
	return string(b)
}

func (r *statReader) int(dir, name string) int64 {
	s := strings.TrimSpace(r.read(dir, name))
	if s == "" || s == "max" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("read %s: %q is not a number", name, s))
	}
	return v
}

// readStatsV1 reads a job's counters from its v1 controller directories
// (keys "cpu", "cpuacct", "memory", "blkio"; absent keys read as zero).
func readStatsV1(dirs map[string]string, now time.Time) (runner.Stats, error) {
	var r statReader
	st := runner.Stats{Time: now}
	st.CPUUsageSeconds = float64(r.int(dirs["cpuacct"], "cpuacct.usage")) / 1e9
	cpu := parseKeyed(r.read(dirs["cpu"], "cpu.stat"))
	st.CPUPeriods = cpu["nr_periods"]
	st.CPUThrottledPeriods = cpu["nr_throttled"]
	st.CPUThrottledSeconds = float64(cpu["throttled_time"]) / 1e9 // ns on v1
	mem := dirs["memory"]
	st.MemUsageBytes = r.int(mem, "memory.usage_in_bytes")
	st.MemPeakBytes = r.int(mem, "memory.max_usage_in_bytes")
	ms := parseKeyed(r.read(mem, "memory.stat"))
	st.MemCacheBytes = int64(ms["total_cache"])
	st.MemAnonBytes = int64(ms["total_rss"])
	st.OOMEvents = parseKeyed(r.read(mem, "memory.oom_control"))["oom_kill"]
	if blk := r.read(dirs["blkio"], "blkio.throttle.io_service_bytes_recursive"); blk != "" {
		st.IOReadBytes = parseBlkioReadBytes(blk)
	} else {
		st.IOReadBytes = parseBlkioReadBytes(r.read(dirs["blkio"], "blkio.throttle.io_service_bytes"))
	}
	return st, errors.Join(r.errs...)
}

// readStatsV2 reads a job's counters from its unified directory.
func readStatsV2(dir string, now time.Time) (runner.Stats, error) {
	var r statReader
	st := runner.Stats{Time: now}
	cpu := parseKeyed(r.read(dir, "cpu.stat"))
	st.CPUUsageSeconds = float64(cpu["usage_usec"]) / 1e6
	st.CPUPeriods = cpu["nr_periods"]
	st.CPUThrottledPeriods = cpu["nr_throttled"]
	st.CPUThrottledSeconds = float64(cpu["throttled_usec"]) / 1e6
	st.MemUsageBytes = r.int(dir, "memory.current")
	st.MemPeakBytes = r.int(dir, "memory.peak")
	ms := parseKeyed(r.read(dir, "memory.stat"))
	st.MemCacheBytes = int64(ms["file"])
	st.MemAnonBytes = int64(ms["anon"])
	st.OOMEvents = parseKeyed(r.read(dir, "memory.events"))["oom_kill"]
	st.IOReadBytes = parseIOStatReadBytes(r.read(dir, "io.stat"))
	return st, errors.Join(r.errs...)
}
