package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/sensitivity"
)

// Series names written by Sampler.
const (
	SeriesCPUPct        = "host_cpu_pct"
	SeriesMemUsedBytes  = "host_mem_used_bytes"
	SeriesMemAvailBytes = "host_mem_available_bytes"
	SeriesMemCacheBytes = "host_mem_cache_bytes"
	SeriesDiskReadBytes = "host_disk_read_bytes"
)

const (
	defaultProcRoot = "/proc"
	defaultSysRoot  = "/sys"
)

// Options say where to look. The zero value samples this machine through
// /proc and /sys, with host_disk_read_bytes over all physical disks.
type Options struct {
	ProcRoot string // default /proc
	SysRoot  string // default /sys
	// DiskPath selects the block device whose reads are counted: the one
	// holding this path (the dataset directory). Empty means all disks.
	DiskPath string
}

func (o Options) withDefaults() Options {
	if o.ProcRoot == "" {
		o.ProcRoot = defaultProcRoot
	}
	if o.SysRoot == "" {
		o.SysRoot = defaultSysRoot
	}
	return o
}

// envContext carries the roots to gopsutil.
func envContext(o Options) context.Context {
	return context.WithValue(context.Background(), common.EnvKey, common.EnvMap{
		common.HostProcEnvKey: o.ProcRoot,
		common.HostSysEnvKey:  o.SysRoot,
	})
}

// Info describes the machine for the profile's host block (hostname, CPU
// model, logical CPUs, DRAM bytes); the other fields are left to the caller.
func Info(o Options) (sensitivity.HostInfo, error) {
	o = o.withDefaults()
	ctx := envContext(o)
	var h sensitivity.HostInfo
	var err error
	if h.Hostname, err = os.Hostname(); err != nil {
		return h, fmt.Errorf("describe host: hostname: %w", err)
	}
	infos, err := cpu.InfoWithContext(ctx)
	if err != nil {
		return h, fmt.Errorf("describe host: read %s/cpuinfo: %w", o.ProcRoot, err)
	}
	if len(infos) > 0 {
		h.CPUModel = infos[0].ModelName
	}
	if h.LogicalCPUs, err = cpu.CountsWithContext(ctx, true); err != nil {
		return h, fmt.Errorf("describe host: count logical cpus: %w", err)
	}
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return h, fmt.Errorf("describe host: read %s/meminfo: %w", o.ProcRoot, err)
	}
	h.DRAMBytes = int64(vm.Total)
	return h, nil
}

// Sampler reads host CPU, memory and disk counters. It is not safe for
// concurrent use.
type Sampler struct {
	ctx       context.Context
	disks     []string
	diskScope string
	prev      cpu.TimesStat
	havePrev  bool
}

var _ sample.Sampler = (*Sampler)(nil)

// NewSampler resolves the disks to count and returns the sampler.
func NewSampler(o Options) (*Sampler, error) {
	o = o.withDefaults()
	disks, scope, err := resolveDisks(o.SysRoot, o.DiskPath)
	if err != nil {
		return nil, fmt.Errorf("new host sampler: %w", err)
	}
	return &Sampler{ctx: envContext(o), disks: disks, diskScope: scope}, nil
}

// DiskScope says which disks host_disk_read_bytes counts, and why
// ("vda (holds /data)", "all physical disks: vda (/dev/shm has no block
// device)").
func (s *Sampler) DiskScope() string { return s.diskScope }

// Name is "host".
func (s *Sampler) Name() string { return "host" }

// Sample writes this tick's host values; a source that fails does not hide
// the others.
func (s *Sampler) Sample(now time.Time, out *sample.Record) error {
	var errs []error
	if ts, err := cpu.TimesWithContext(s.ctx, false); err != nil {
		errs = append(errs, fmt.Errorf("read cpu times: %w", err))
	} else if len(ts) > 0 {
		if s.havePrev {
			if pct, ok := busyPct(s.prev, ts[0]); ok {
				out.Set(SeriesCPUPct, pct)
			}
		}
		s.prev, s.havePrev = ts[0], true
	}
	if vm, err := mem.VirtualMemoryWithContext(s.ctx); err != nil {
		errs = append(errs, fmt.Errorf("read memory: %w", err))
	} else {
		out.Set(SeriesMemUsedBytes, float64(vm.Used))
		out.Set(SeriesMemAvailBytes, float64(vm.Available))
		out.Set(SeriesMemCacheBytes, float64(vm.Cached+vm.Buffers))
	}
	if len(s.disks) > 0 {
		// gopsutil rewrites the names slice in place; give it a copy.
		names := append(make([]string, 0, len(s.disks)), s.disks...)
		if io, err := disk.IOCountersWithContext(s.ctx, names...); err != nil {
			errs = append(errs, fmt.Errorf("read disk counters: %w", err))
		} else {
			var sum uint64
			for _, d := range s.disks {
				sum += io[d].ReadBytes // a disk with no I/O yet is left out: 0
			}
			out.Set(SeriesDiskReadBytes, float64(sum))
		}
	}
	return errors.Join(errs...)
}

// busyPct is the busy share of CPU time between two readings, in percent of
// all CPUs (0–100): 100 × Δ(total − idle − iowait) / Δtotal, where total
// excludes guest time (already counted in user and nice by the kernel). It
// reports false when no time passed or the counters went backwards.
func busyPct(prev, cur cpu.TimesStat) (float64, bool) {
	total := func(t cpu.TimesStat) float64 {
		return t.User + t.Nice + t.System + t.Idle + t.Iowait + t.Irq + t.Softirq + t.Steal
	}
	dt := total(cur) - total(prev)
	didle := (cur.Idle + cur.Iowait) - (prev.Idle + prev.Iowait)
	if dt <= 0 || didle < 0 || didle > dt {
		return 0, false
	}
	return 100 * (dt - didle) / dt, true
}

// resolveDisks picks the block devices to count: the one holding path (a
// partition counts as itself), or every physical disk (those of
// sysRoot/block not under devices/virtual) when path is empty or on no
// block device.
func resolveDisks(sysRoot, path string) (names []string, scope string, err error) {
	why := "no dataset path given"
	if path != "" {
		d, err := cgroupfs.DeviceOf(path)
		if err != nil {
			return nil, "", err
		}
		name, err := cgroupfs.DevName(d, sysRoot)
		if err == nil {
			return []string{name}, fmt.Sprintf("%s (holds %s)", name, path), nil
		}
		why = fmt.Sprintf("%s has no block device (%s)", path, d)
	}
	ents, err := os.ReadDir(filepath.Join(sysRoot, "block"))
	if err != nil {
		return nil, "", fmt.Errorf("list disks: %w", err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(sysRoot, "block", e.Name()))
		if err != nil || strings.Contains(target, "/virtual/") {
			continue // loop, ram, zram, dm: not physical, or double counted
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, fmt.Sprintf("all physical disks: %s (%s)", strings.Join(names, ","), why), nil
}
