package local

import (
	"fmt"
	"math"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// plan is a job's limits resolved against this host: the concrete cpuset,
// the CFS quota, the device to throttle. It is what the translation
// functions turn into cgroup settings; zero fields mean "leave alone".
type plan struct {
	CPUSet        []int        // nil: inherit the parent's cpuset
	QuotaUS       int64        // 0: no CFS quota
	PeriodUS      uint64       // CFS period when QuotaUS > 0
	MemLimitBytes int64        // 0: no memory limit
	NoSwap        bool         // with a memory limit: forbid swap (memsw = limit on v1, swap.max = 0 on v2)
	ReadBPS       int64        // 0: no read throttle
	ReadDev       cgroupfs.Dev // whole disk to throttle when ReadBPS > 0
}

// planFor resolves limits against the CPUs the job may use (online, the
// parent cgroup's effective cpuset) and the disk that holds the dataset
// (dev, used only when l.ReadBPS > 0). noSwap says whether the host can
// account swap, in which case a memory limit also forbids swapping.
func planFor(l runner.Limits, online []int, dev cgroupfs.Dev, noSwap bool) (plan, error) {
	var p plan
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return plan{}, fmt.Errorf("limits: cpus=%g is not a CPU budget (want > 0, or 0 for all)", l.CPUs)
	}
	if l.MemLimitBytes < 0 {
		return plan{}, fmt.Errorf("limits: memory limit %d bytes is negative", l.MemLimitBytes)
	}
	if l.ReadBPS < 0 {
		return plan{}, fmt.Errorf("limits: read limit %d B/s is negative", l.ReadBPS)
	}
	switch {
	case l.CPUSet != nil:
		set := slices.Clone(l.CPUSet)
		slices.Sort(set)
		set = slices.Compact(set)
		if len(set) == 0 {
			return plan{}, fmt.Errorf("limits: cpuset is empty (want at least one CPU, or nil for the first ceil(cpus))")
		}
		for _, c := range set {
			if !slices.Contains(online, c) {
				return plan{}, fmt.Errorf("limits: cpuset %s names CPU %d, which is not available (available: %s)",
					runner.FormatCPUSet(set), c, runner.FormatCPUSet(online))
			}
		}
		if need := int(math.Ceil(l.CPUs)); l.CPUs > 0 && len(set) < need {
			return plan{}, fmt.Errorf("limits: cpus=%g needs %d cores but cpuset %s has %d",
				l.CPUs, need, runner.FormatCPUSet(set), len(set))
		}
		p.CPUSet = set
	case l.CPUs > 0:
		set, err := runner.CPUSetFor(l.CPUs, online)
		if err != nil {
			return plan{}, fmt.Errorf("limits: %w", err)
		}
		p.CPUSet = set
	}
	if l.CPUs > 0 {
		p.PeriodUS = runner.DefaultCFSPeriodUS
		p.QuotaUS = runner.QuotaFor(l.CPUs, p.PeriodUS)
		if p.QuotaUS < 1000 { // the kernel's minimum CFS quota is 1 ms
			return plan{}, fmt.Errorf("limits: cpus=%g gives a CFS quota of %dus, below the kernel's minimum of 1000us", l.CPUs, p.QuotaUS)
		}
	}
	if l.MemLimitBytes > 0 {
		p.MemLimitBytes = l.MemLimitBytes
		p.NoSwap = noSwap
	}
	if l.ReadBPS > 0 {
		if l.ReadBPSPath == "" {
			return plan{}, fmt.Errorf("limits: read limit %d B/s given without the path whose disk it throttles", l.ReadBPS)
		}
		p.ReadBPS = l.ReadBPS
		p.ReadDev = dev
	}
	return p, nil
}

// v1Resources translates a plan into cgroup v1 settings for containerd's
// cgroup1 package: cpuset.cpus (cpuset.mems is left empty, so it is copied
// from the parent), cpu.cfs_quota_us and cpu.cfs_period_us,
// memory.limit_in_bytes (and memory.memsw.limit_in_bytes = the same when
// swap is forbidden) and blkio.throttle.read_bps_device. Nil parts are left
// alone.
func v1Resources(p plan) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if p.CPUSet != nil || p.QuotaUS > 0 {
		r.CPU = &specs.LinuxCPU{}
		if p.CPUSet != nil {
			r.CPU.Cpus = runner.FormatCPUSet(p.CPUSet)
		}
		if p.QuotaUS > 0 {
			q, per := p.QuotaUS, p.PeriodUS
			r.CPU.Quota, r.CPU.Period = &q, &per
		}
	}
	if p.MemLimitBytes > 0 {
		lim := p.MemLimitBytes
		r.Memory = &specs.LinuxMemory{Limit: &lim}
		if p.NoSwap {
			sw := lim
			r.Memory.Swap = &sw
		}
	}
	if p.ReadBPS > 0 {
		r.BlockIO = &specs.LinuxBlockIO{ThrottleReadBpsDevice: []specs.LinuxThrottleDevice{{
			LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: p.ReadDev.Major, Minor: p.ReadDev.Minor},
			Rate:               uint64(p.ReadBPS),
		}}}
	}
	return r
}

// v2Resources translates a plan into cgroup v2 settings for containerd's
// cgroup2 package: cpuset.cpus, cpu.max "quota period", memory.max (and
// memory.swap.max = 0 when swap is forbidden) and io.max "MAJ:MIN rbps=N".
// Nil parts are left alone, and their controllers are not enabled.
func v2Resources(p plan) *cgroup2.Resources {
	r := &cgroup2.Resources{}
	if p.CPUSet != nil || p.QuotaUS > 0 {
		r.CPU = &cgroup2.CPU{}
		if p.CPUSet != nil {
			r.CPU.Cpus = runner.FormatCPUSet(p.CPUSet)
		}
		if p.QuotaUS > 0 {
			q, per := p.QuotaUS, p.PeriodUS
			r.CPU.Max = cgroup2.NewCPUMax(&q, &per)
		}
	}
	if p.MemLimitBytes > 0 {
		lim := p.MemLimitBytes
		r.Memory = &cgroup2.Memory{Max: &lim}
		if p.NoSwap {
			var zero int64
			r.Memory.Swap = &zero
		}
	}
	if p.ReadBPS > 0 {
		r.IO = &cgroup2.IO{Max: []cgroup2.Entry{{
			Type: cgroup2.ReadBPS, Major: p.ReadDev.Major, Minor: p.ReadDev.Minor, Rate: uint64(p.ReadBPS),
		}}}
	}
	return r
}
