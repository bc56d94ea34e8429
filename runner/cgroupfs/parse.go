package cgroupfs

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/synergy-sched/synergy/runner"
)

// parseUint parses a file that holds one unsigned decimal ("123\n").
func parseUint(b []byte) (uint64, error) {
	s := bytes.TrimSpace(b)
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an unsigned number", s)
	}
	return v, nil
}

// scanKeyed calls fn for each "key value" line of a flat keyed file
// (cpu.stat, memory.stat, memory.events, memory.oom_control). A line whose
// value is not an unsigned number is an error naming the line.
func scanKeyed(b []byte, fn func(key []byte, v uint64)) error {
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		k, val, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			return fmt.Errorf("line %d: %q is not \"key value\"", n, line)
		}
		v, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: %q: value is not an unsigned number", n, line)
		}
		fn(k, v)
	}
	return nil
}

// sumBlkioRead sums the "Read" bytes over devices of a v1
// blkio.throttle.io_service_bytes file ("MAJ:MIN Read N" lines; the
// per-device and grand "Total" lines are skipped) and counts the devices.
// Recent kernels account a device here only once a throttle rule is set on
// it; a file with no device line (just "Total 0") means "not accounted".
func sumBlkioRead(b []byte) (sum uint64, devices int, err error) {
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) != 3 || string(f[1]) != "Read" {
			continue
		}
		v, err := strconv.ParseUint(string(f[2]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("line %d: %q: bytes are not an unsigned number", n, line)
		}
		sum += v
		devices++
	}
	return sum, devices, nil
}

// sumIOStatRead sums rbytes over the devices of a v2 io.stat file
// ("MAJ:MIN rbytes=N wbytes=N ..." lines).
func sumIOStatRead(b []byte) (uint64, error) {
	var sum uint64
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		for _, kv := range f[min(1, len(f)):] {
			k, val, ok := bytes.Cut(kv, []byte{'='})
			if !ok || string(k) != "rbytes" {
				continue
			}
			v, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("line %d: %q: rbytes is not an unsigned number", n, line)
			}
			sum += v
		}
	}
	return sum, nil
}

// The parsers below turn one file's bytes into runner.Stats fields.

func parseCPUAcctUsage(b []byte, c *runner.Stats) error {
	ns, err := parseUint(b)
	if err != nil {
		return err
	}
	c.CPUUsageSeconds = float64(ns) / 1e9
	c.Has |= runner.StatCPUUsage
	return nil
}

// parseCPUStatV1 reads throttling from v1 cpu.stat (throttled_time in ns).
func parseCPUStatV1(b []byte, c *runner.Stats) error {
	return scanKeyed(b, func(k []byte, v uint64) {
		switch string(k) {
		case "nr_periods":
			c.CPUPeriods, c.Has = v, c.Has|runner.StatCPUPeriods
		case "nr_throttled":
			c.CPUThrottledPeriods, c.Has = v, c.Has|runner.StatCPUThrottledPeriods
		case "throttled_time":
			c.CPUThrottledSeconds, c.Has = float64(v)/1e9, c.Has|runner.StatCPUThrottledSeconds
		}
	})
}

// parseCPUStatV2 reads usage and throttling from v2 cpu.stat (µs). The
// nr_* lines exist only where the cpu controller is enabled for the group.
func parseCPUStatV2(b []byte, c *runner.Stats) error {
	return scanKeyed(b, func(k []byte, v uint64) {
		switch string(k) {
		case "usage_usec":
			c.CPUUsageSeconds, c.Has = float64(v)/1e6, c.Has|runner.StatCPUUsage
		case "nr_periods":
			c.CPUPeriods, c.Has = v, c.Has|runner.StatCPUPeriods
		case "nr_throttled":
			c.CPUThrottledPeriods, c.Has = v, c.Has|runner.StatCPUThrottledPeriods
		case "throttled_usec":
			c.CPUThrottledSeconds, c.Has = float64(v)/1e6, c.Has|runner.StatCPUThrottledSeconds
		}
	})
}

func parseMemUsage(b []byte, c *runner.Stats) error {
	v, err := parseUint(b)
	if err != nil {
		return err
	}
	c.MemUsageBytes, c.Has = int64(v), c.Has|runner.StatMemUsage
	return nil
}

func parseMemPeak(b []byte, c *runner.Stats) error {
	v, err := parseUint(b)
	if err != nil {
		return err
	}
	c.MemPeakBytes, c.Has = int64(v), c.Has|runner.StatMemPeak
	return nil
}

// parseMemStatV1 takes the hierarchical totals (total_cache, total_rss), so
// a job that forks into child groups is still counted whole.
func parseMemStatV1(b []byte, c *runner.Stats) error {
	return scanKeyed(b, func(k []byte, v uint64) {
		switch string(k) {
		case "total_cache":
			c.MemCacheBytes, c.Has = int64(v), c.Has|runner.StatMemCache
		case "total_rss":
			c.MemAnonBytes, c.Has = int64(v), c.Has|runner.StatMemAnon
		}
	})
}

// parseMemStatV2 takes file (page cache) and anon; v2 memory.stat is
// hierarchical already.
func parseMemStatV2(b []byte, c *runner.Stats) error {
	return scanKeyed(b, func(k []byte, v uint64) {
		switch string(k) {
		case "file":
			c.MemCacheBytes, c.Has = int64(v), c.Has|runner.StatMemCache
		case "anon":
			c.MemAnonBytes, c.Has = int64(v), c.Has|runner.StatMemAnon
		}
	})
}

// parseOOMKill reads oom_kill from v1 memory.oom_control or v2
// memory.events (both "key value" files).
func parseOOMKill(b []byte, c *runner.Stats) error {
	return scanKeyed(b, func(k []byte, v uint64) {
		if string(k) == "oom_kill" {
			c.OOMEvents, c.Has = v, c.Has|runner.StatOOMEvents
		}
	})
}

// parseBlkio reads v1 block I/O; with no device accounted the counter is
// absent rather than a misleading zero.
func parseBlkio(b []byte, c *runner.Stats) error {
	v, devices, err := sumBlkioRead(b)
	if err != nil || devices == 0 {
		return err
	}
	c.IOReadBytes, c.Has = int64(v), c.Has|runner.StatIORead
	return nil
}

func parseIOStat(b []byte, c *runner.Stats) error {
	v, err := sumIOStatRead(b)
	if err != nil {
		return err
	}
	c.IOReadBytes, c.Has = int64(v), c.Has|runner.StatIORead
	return nil
}
