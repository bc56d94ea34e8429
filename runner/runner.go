package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synergy-sched/synergy/internal/units"
)

// Limits are the resources one profiling point may use. The zero value of
// each field means "no limit".
type Limits struct {
	// CPUs is the CPU budget in cores. The job gets a cpuset of ceil(CPUs)
	// cores (so sched_getaffinity reports the limit) and a CFS quota of
	// CPUs × period. 0 means all cores, no quota.
	CPUs float64
	// CPUSet is the exact list of logical CPUs; nil means the first
	// ceil(CPUs) online CPUs. Runners fill it in with CPUSetFor.
	CPUSet []int
	// MemLimitBytes is the cgroup memory limit; page cache is charged to it.
	MemLimitBytes int64
	// ReadBPS throttles reads from the block device holding ReadBPSPath
	// (blkio.throttle.read_bps_device on v1, io.max rbps on v2).
	ReadBPS     int64
	ReadBPSPath string
}

// String renders limits for messages: "cpus=2 mem=1GiB read=50MB/s".
func (l Limits) String() string {
	s := "cpus=all"
	if l.CPUs > 0 {
		s = fmt.Sprintf("cpus=%g", l.CPUs)
	}
	s += " mem=" + units.FormatMemLimit(l.MemLimitBytes)
	if l.ReadBPS > 0 {
		s += fmt.Sprintf(" read=%s/s", units.FormatBytes(l.ReadBPS))
	}
	return s
}

// Job is one launch of the user's training script.
type Job struct {
	// Name labels the cgroup or container; it need not be unique.
	Name string
	// Argv is the full command: the script, its arguments and the contract
	// flags the profiler appended last. Never a shell string.
	Argv []string
	// Env is added to the runner's environment (KEY=VALUE).
	Env []string
	// Dir is the working directory (local runner).
	Dir string
	// Stdout and Stderr receive the job's output; nil discards it.
	Stdout, Stderr io.Writer
	// Limits are applied before the job runs any of its own code.
	Limits Limits
	// DataDir is the dataset directory (mounted read-only by container
	// runners at their mount point).
	DataDir string
	// MetricsDir is a writable directory shared with the job for its
	// metrics stream (SYNERGY_METRICS_FILE lives inside it).
	MetricsDir string
	// ProbeDir is a host directory of code the job loads (the injected
	// DataLoader probe, on PYTHONPATH): used in place by the local runner,
	// mounted read-only by container runners, which rewrite paths below it
	// in Argv and Env as for MetricsDir. "" when none.
	ProbeDir string
}

// Runner starts jobs under limits.
type Runner interface {
	// Name is "local" or "docker".
	Name() string
	// Start launches the job with its limits in force from its first
	// instruction. The returned Handle must be waited on; Wait releases
	// every resource (cgroup, container) whatever happens.
	Start(ctx context.Context, job Job) (Handle, error)
}

// Handle is a running job.
type Handle interface {
	// Stats reads the job's current resource counters.
	Stats() (Stats, error)
	// Stop kills the whole job (process group or container) now. Wait still
	// has to be called; a job ended by Stop reports Stopped=true.
	Stop() error
	// Wait blocks until the job ends, collects final counters, and removes
	// the cgroup or container. If ctx (given to Start) is cancelled, the job
	// is killed first.
	Wait() (Result, error)
	// StatsPath is the job's cgroup directory for the memory controller (or
	// the unified one on v2), for samplers that read files directly; "" if
	// none.
	CgroupPaths() map[string]string
}

// Result is how a job ended.
type Result struct {
	ExitCode    int    // -1 when killed by a signal
	Signal      string // e.g. "killed"; empty on a normal exit
	OOMKilled   bool   // the kernel OOM killer acted in the job's cgroup
	Stopped     bool   // ended by Handle.Stop or context cancellation
	WallSeconds float64
	Final       Stats // counters read just before the cgroup was removed
	// Escaped names the processes ("PID (comm)") that left the job's
	// cgroup and outlived it, which the runner then killed (local runner:
	// a job running as root can move a process out of its cgroup).
	Escaped []string
}

// Stats are a job's cgroup counters at one moment. Only the counters
// flagged in Has were read; the others are zero and mean "no data", not 0
// (a file the kernel does not offer, a device not accounted).
type Stats struct {
	Time                time.Time
	CPUUsageSeconds     float64
	CPUPeriods          uint64
	CPUThrottledPeriods uint64
	CPUThrottledSeconds float64
	MemUsageBytes       int64
	MemPeakBytes        int64
	MemCacheBytes       int64 // page cache charged to the group
	MemAnonBytes        int64 // anonymous memory (rss)
	IOReadBytes         int64
	OOMEvents           uint64
	Has                 StatField
}

// StatField is a set of Stats counters, one bit each.
type StatField uint16

// The Stats counters.
const (
	StatCPUUsage StatField = 1 << iota
	StatCPUPeriods
	StatCPUThrottledPeriods
	StatCPUThrottledSeconds
	StatMemUsage
	StatMemPeak
	StatMemCache
	StatMemAnon
	StatOOMEvents
	StatIORead
	// StatAll is every counter.
	StatAll = StatIORead<<1 - 1
)

// CPUSetFor returns the logical CPUs for a budget of cpus cores out of
// online: the first ceil(cpus) of them (all of them for cpus <= 0).
func CPUSetFor(cpus float64, online []int) ([]int, error) {
	if cpus <= 0 {
		return append([]int(nil), online...), nil
	}
	n := int(math.Ceil(cpus))
	if n > len(online) {
		return nil, fmt.Errorf("cpus=%g needs %d cores but only %d are online", cpus, n, len(online))
	}
	return append([]int(nil), online[:n]...), nil
}

// FormatCPUSet renders a cpuset list in the kernel's syntax ("0-3,6").
func FormatCPUSet(cpus []int) string {
	s := ""
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if s != "" {
			s += ","
		}
		if j == i {
			s += fmt.Sprint(cpus[i])
		} else {
			s += fmt.Sprintf("%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return s
}

// ParseCPUSet parses the kernel's CPU list syntax ("0-3,6", as in
// cpuset.cpus and /sys/devices/system/cpu/online) into sorted, distinct
// CPU numbers; blank is none.
func ParseCPUSet(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	var out []int
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: %q is not a CPU range", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// QuotaFor returns the CFS quota in microseconds for cpus cores over the
// given period; 0 for no quota.
func QuotaFor(cpus float64, periodUS uint64) int64 {
	if cpus <= 0 {
		return 0
	}
	return int64(math.Round(cpus * float64(periodUS)))
}

// DefaultCFSPeriodUS is the CFS period the runners use.
const DefaultCFSPeriodUS = 100000
