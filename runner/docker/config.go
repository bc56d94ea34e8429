package docker

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/synergy-sched/synergy/internal/units"
	"github.com/synergy-sched/synergy/jobcontract"
	"github.com/synergy-sched/synergy/runner"
)

// Labels set on every container this package creates, so that leftovers can
// be found with `docker ps -a --filter label=synergy.profile`.
const (
	LabelProfile = "synergy.profile" // always "1"
	LabelJob     = "synergy.job"     // Job.Name
	LabelPoint   = "synergy.point"   // Limits.String(), e.g. "cpus=2 mem=1GiB"
	// LabelOwner is the synergy process that made the container,
	// "PID-START" (runner/owner), and LabelHost the host it runs on: a
	// container whose owner on this host is dead is an orphan (ReapOrphans).
	LabelOwner = "synergy.owner"
	LabelHost  = "synergy.host"
)

// pathMap rewrites host paths to container paths: a value equal to a host
// directory, or below it, is moved under the matching container directory.
// The longest host directory wins when they nest.
type pathMap []pathRule

type pathRule struct{ host, ctr string }

func newPathMap(rules ...pathRule) pathMap {
	var m pathMap
	for _, r := range rules {
		if r.host == "" {
			continue
		}
		m = append(m, pathRule{host: filepath.Clean(r.host), ctr: r.ctr})
	}
	sort.SliceStable(m, func(i, j int) bool { return len(m[i].host) > len(m[j].host) })
	return m
}

// path rewrites p if it is one of the host directories or lies below one;
// ok reports whether it did.
func (m pathMap) path(p string) (string, bool) {
	if p == "" || !filepath.IsAbs(p) {
		return p, false
	}
	c := filepath.Clean(p)
	for _, r := range m {
		if c == r.host {
			return r.ctr, true
		}
		prefix := r.host + "/"
		if r.host == "/" {
			prefix = "/"
		}
		if strings.HasPrefix(c, prefix) {
			return filepath.Join(r.ctr, strings.TrimPrefix(c, prefix)), true
		}
	}
	return p, false
}

// arg rewrites one argv element: either a bare path ("/data/imagenet") or the
// value of a "--flag=/data/imagenet" element.
func (m pathMap) arg(a string) string {
	if t, ok := m.path(a); ok {
		return t
	}
	if k, v, found := strings.Cut(a, "="); found && strings.HasPrefix(k, "-") {
		if t, ok := m.path(v); ok {
			return k + "=" + t
		}
	}
	return a
}

// translateArgv rewrites host paths under DataDir and MetricsDir in argv to
// their container mount points. It returns a new slice.
func translateArgv(argv []string, m pathMap) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = m.arg(a)
	}
	return out
}

// translateEnv rewrites KEY=VALUE entries whose value is a host path under
// DataDir or MetricsDir. SYNERGY_METRICS_FILE must lie under MetricsDir: a
// container could not write anywhere else on the host.
func translateEnv(env []string, m pathMap, metricsDir string) ([]string, error) {
	out := make([]string, 0, len(env))
	for i, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("env[%d] %q: not KEY=VALUE", i, kv)
		}
		t, moved := m.envValue(k, v)
		if k == jobcontract.EnvMetricsFile && v != "" && !moved {
			return nil, fmt.Errorf("env %s=%s: not inside Job.MetricsDir %q, the only host directory the container can write", jobcontract.EnvMetricsFile, v, metricsDir)
		}
		out = append(out, k+"="+t)
	}
	return out, nil
}

// containerConfig turns a job into the container's Config: the command
// (Argv, with host paths translated), the environment, and the labels. A pure
// function.
func containerConfig(job runner.Job, o Options) (*container.Config, error) {
	if len(job.Argv) == 0 {
		return nil, fmt.Errorf("job %q: empty Argv", job.Name)
	}
	m := newPathMap(pathRule{job.DataDir, o.ContainerMnt}, pathRule{job.MetricsDir, o.MetricsMnt}, pathRule{job.ProbeDir, ProbeMnt})
	argv := translateArgv(job.Argv, m)
	env, err := translateEnv(job.Env, m, job.MetricsDir)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.Name, err)
	}
	cfg := &container.Config{
		Image: o.Image,
		Env:   env,
		Labels: map[string]string{
			LabelProfile: "1",
			LabelJob:     job.Name,
			LabelPoint:   job.Limits.String(),
		},
	}
	for k, v := range o.Labels {
		cfg.Labels[k] = v
	}
	if o.UseImageEntrypoint {
		cfg.Cmd = argv
	} else {
		cfg.Entrypoint = argv[:1]
		cfg.Cmd = argv[1:]
		if len(cfg.Cmd) == 0 {
			// An empty, non-nil Cmd keeps the image's CMD from being
			// appended to our entrypoint.
			cfg.Cmd = []string{}
		}
	}
	return cfg, nil
}

// DefaultShmSizeBytes is /dev/shm's size when Options.ShmSizeBytes is 0 and
// the memory limit is at least twice as large. Docker's own default (64MiB)
// is too small for PyTorch data-loader workers, which pass batches through
// shared memory.
const DefaultShmSizeBytes = 1 << 30

// shmSizeFor returns /dev/shm's size: the explicit size if set, else 1GiB
// capped at half the memory limit. tmpfs pages are charged to the
// container's memory cgroup, so a larger /dev/shm than the limit could never
// be filled, and half leaves room for the job's own memory.
func shmSizeFor(explicit, memLimitBytes int64) int64 {
	if explicit > 0 {
		return explicit
	}
	s := int64(DefaultShmSizeBytes)
	if memLimitBytes > 0 && memLimitBytes/2 < s {
		s = memLimitBytes / 2
	}
	return s
}

// hostConfig turns a job's limits and directories into the container's
// HostConfig. A pure function: online is the host's online CPU list and
// readDevice the block device (e.g. "/dev/vda") that holds
// Limits.ReadBPSPath, resolved by the caller; "" when ReadBPS is 0.
//
//   - CPUs: cpuset of Limits.CPUSet, or of the first ceil(CPUs) online CPUs,
//     and a CFS quota of CPUs × 100ms per 100ms period.
//   - Memory: limit = MemLimitBytes and MemorySwap equal to it (no swap).
//   - /dev/shm: shmSizeFor.
//   - Reads: BlkioDeviceReadBps on readDevice.
//   - Mounts: DataDir read-only at ContainerMnt, MetricsDir read-write at
//     MetricsMnt, ProbeDir read-only at ProbeMnt.
//   - GPUs: a DeviceRequest for Options.GPUs GPUs (-1: all).
func hostConfig(job runner.Job, o Options, online []int, readDevice string) (*container.HostConfig, error) {
	l := job.Limits
	hc := &container.HostConfig{}

	if l.CPUs < 0 {
		return nil, fmt.Errorf("limits: cpus=%g is negative", l.CPUs)
	}
	cpus := l.CPUSet
	if cpus == nil && l.CPUs > 0 {
		var err error
		if cpus, err = runner.CPUSetFor(l.CPUs, online); err != nil {
			return nil, fmt.Errorf("limits: %w", err)
		}
	}
	if len(cpus) > 0 {
		hc.CpusetCpus = runner.FormatCPUSet(cpus)
	}
	if l.CPUs > 0 {
		hc.CPUPeriod = runner.DefaultCFSPeriodUS
		hc.CPUQuota = runner.QuotaFor(l.CPUs, runner.DefaultCFSPeriodUS)
		if hc.CPUQuota < 1000 {
			return nil, fmt.Errorf("limits: cpus=%g gives a CFS quota of %dus, below the kernel's 1000us minimum", l.CPUs, hc.CPUQuota)
		}
	}

	switch {
	case l.MemLimitBytes < 0:
		return nil, fmt.Errorf("limits: mem=%d is negative", l.MemLimitBytes)
	case l.MemLimitBytes > 0 && l.MemLimitBytes < 6<<20:
		// Docker refuses limits below 6MiB; say so in our words.
		return nil, fmt.Errorf("limits: mem=%s is below Docker's 6MiB minimum", units.FormatBytes(l.MemLimitBytes))
	case l.MemLimitBytes > 0:
		hc.Memory = l.MemLimitBytes
		hc.MemorySwap = l.MemLimitBytes
	}
	hc.ShmSize = shmSizeFor(o.ShmSizeBytes, l.MemLimitBytes)

	if l.ReadBPS < 0 {
		return nil, fmt.Errorf("limits: read=%d B/s is negative", l.ReadBPS)
	}
	if l.ReadBPS > 0 {
		if readDevice == "" {
			return nil, fmt.Errorf("limits: read=%s/s but no block device found for %q", units.FormatBytes(l.ReadBPS), l.ReadBPSPath)
		}
		hc.BlkioDeviceReadBps = []*blkiodev.ThrottleDevice{{Path: readDevice, Rate: uint64(l.ReadBPS)}}
	}

	if job.DataDir != "" {
		if !filepath.IsAbs(job.DataDir) {
			return nil, fmt.Errorf("job DataDir %q is not absolute", job.DataDir)
		}
		if filepath.Clean(job.DataDir) == "/" {
			return nil, fmt.Errorf("job DataDir is the host root: synergy never mounts it")
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: filepath.Clean(job.DataDir), Target: o.ContainerMnt, ReadOnly: true,
		})
	}
	if job.MetricsDir != "" {
		if !filepath.IsAbs(job.MetricsDir) {
			return nil, fmt.Errorf("job MetricsDir %q is not absolute", job.MetricsDir)
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: filepath.Clean(job.MetricsDir), Target: o.MetricsMnt,
		})
	}
	if pm, err := probeMount(job); err != nil {
		return nil, err
	} else if pm != nil {
		hc.Mounts = append(hc.Mounts, *pm)
	}

	if o.GPUs != 0 {
		if o.GPUs < -1 {
			return nil, fmt.Errorf("gpus=%d: use a count, or -1 for all", o.GPUs)
		}
		hc.DeviceRequests = []container.DeviceRequest{{Count: o.GPUs, Capabilities: [][]string{{"gpu"}}}}
	}
	return hc, nil
}
