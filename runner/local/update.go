package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/synergy-sched/synergy/runner"
)

var _ runner.Updater = (*handle)(nil)

// Update changes the running job's cpuset, CFS quota and memory limit in
// its cgroup (see runner.Updater). Limits are resolved as at Start; a CPU
// budget of 0 gives back every available CPU and lifts the quota, a memory
// limit of 0 lifts the limit. The read limit is not touched.
func (h *handle) Update(ctx context.Context, l runner.Limits) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update job %q: %w", h.job.Name, err)
	}
	l.ReadBPS, l.ReadBPSPath = 0, ""
	p, err := h.run.plan(l)
	if err != nil {
		return fmt.Errorf("update job %q to %s: %w", h.job.Name, l, err)
	}
	// A lifted limit must lift the swap limit a limit set before.
	p.NoSwap = h.run.swapAccounted()
	if p.CPUSet == nil {
		if p.CPUSet, err = h.run.availableCPUs(); err != nil {
			return fmt.Errorf("update job %q: %w", h.job.Name, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.exited:
		return fmt.Errorf("update job %q: %w", h.job.Name, runner.ErrNotRunning)
	default:
	}
	if h.removed {
		return fmt.Errorf("update job %q: %w", h.job.Name, runner.ErrNotRunning)
	}
	switch g := h.grp.(type) {
	case *v1Group:
		err = updateV1(g, p)
	case *v2Group:
		err = updateV2(g, p)
	default:
		err = fmt.Errorf("cgroup %T cannot be updated", h.grp)
	}
	if err != nil {
		return fmt.Errorf("update job %q to %s: %w", h.job.Name, l, err)
	}
	return nil
}

// Values meaning "no limit" in the kernel files.
const (
	v1Unlimited = int64(-1)
	v2Max       = "max"
)

// v1UpdateResources translates a plan into the cgroup v1 settings of an
// update: unlike v1Resources (where nil leaves a file alone, right for a
// fresh cgroup) every CPU and memory setting is written, a missing quota
// as -1 and a missing memory limit as -1 (memsw too when swap is
// accounted). Memory comes as one step per file, ordered so that
// memory.limit_in_bytes <= memory.memsw.limit_in_bytes holds at every
// write: memsw first when the limit rises above curLimit (the current
// memory.limit_in_bytes; lifting is rising), the limit first when it
// falls. (containerd's own ordering swaps the wrong pair of files.)
func v1UpdateResources(p plan, curLimit int64) (cpu *specs.LinuxResources, mem []*specs.LinuxResources) {
	quota, period := v1Unlimited, uint64(runner.DefaultCFSPeriodUS)
	if p.QuotaUS > 0 {
		quota, period = p.QuotaUS, p.PeriodUS
	}
	cpu = &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: runner.FormatCPUSet(p.CPUSet), Quota: &quota, Period: &period}}
	lim, rising := v1Unlimited, true
	if p.MemLimitBytes > 0 {
		lim, rising = p.MemLimitBytes, p.MemLimitBytes > curLimit
	}
	limit := &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &lim}}
	if !p.NoSwap {
		return cpu, []*specs.LinuxResources{limit}
	}
	sw := lim
	swap := &specs.LinuxResources{Memory: &specs.LinuxMemory{Swap: &sw}}
	if rising {
		return cpu, []*specs.LinuxResources{swap, limit}
	}
	return cpu, []*specs.LinuxResources{limit, swap}
}

func updateV1(g *v1Group, p plan) error {
	var cur int64
	if dir, ok := g.dirs["memory"]; ok {
		b, err := os.ReadFile(filepath.Join(dir, "memory.limit_in_bytes"))
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		if cur, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return fmt.Errorf("memory: memory.limit_in_bytes %q: %w", b, err)
		}
	}
	cpu, mem := v1UpdateResources(p, cur)
	if err := g.cg.Update(cpu); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	if _, ok := g.dirs["memory"]; !ok {
		return nil
	}
	for _, m := range mem {
		if err := g.cg.Update(m); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	return nil
}

// v2UpdateFiles translates a plan into the cgroup v2 files of an update, in
// the order to write them: cpuset.cpus, cpu.max ("max PERIOD" without a
// quota), then memory.swap.max and memory.max ("max" without a limit; swap
// stays at 0 when the limit forbids it).
func v2UpdateFiles(p plan) [][2]string {
	quota := (*int64)(nil)
	if p.QuotaUS > 0 {
		quota = &p.QuotaUS
	}
	period := uint64(runner.DefaultCFSPeriodUS)
	if p.PeriodUS > 0 {
		period = p.PeriodUS
	}
	files := [][2]string{
		{"cpuset.cpus", runner.FormatCPUSet(p.CPUSet)},
		{"cpu.max", string(cgroup2.NewCPUMax(quota, &period))},
	}
	mem, swap := v2Max, v2Max
	if p.MemLimitBytes > 0 {
		mem = fmt.Sprint(p.MemLimitBytes)
		if p.NoSwap {
			swap = "0"
		}
	}
	return append(files, [2]string{"memory.swap.max", swap}, [2]string{"memory.max", mem})
}

func updateV2(g *v2Group, p plan) error {
	for _, f := range v2UpdateFiles(p) {
		path := filepath.Join(g.dir, f[0])
		if _, err := os.Stat(path); err != nil {
			if f[0] == "memory.swap.max" {
				continue // swap not accounted
			}
			return fmt.Errorf("%s: %w", f[0], err)
		}
		if err := os.WriteFile(path, []byte(f[1]), 0); err != nil {
			return fmt.Errorf("write %s %q: %w", path, f[1], err)
		}
	}
	return nil
}
