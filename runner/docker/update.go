package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/runner"
)

// updateAPI is the Engine API call that changes a running container's
// limits (docker update). It is kept apart from dockerAPI so that a client
// without it (a fake) simply makes handles that are not runner.Updaters
// at run time; *client.Client has it.
type updateAPI interface {
	ContainerUpdate(ctx context.Context, id string, options client.ContainerUpdateOptions) (client.ContainerUpdateResult, error)
}

var (
	_ updateAPI      = (*client.Client)(nil)
	_ runner.Updater = (*handle)(nil)
)

// updateResources turns new limits into the Resources of an update call,
// as hostConfig does at create: cpuset of Limits.CPUSet or the first
// ceil(CPUs) online CPUs, CFS quota CPUs × 100ms per 100ms; CPUs 0 gives
// every online CPU and quota -1 (none). Memory: limit = MemorySwap =
// MemLimitBytes. The Engine reads a zero field as "leave alone", so a
// memory limit cannot be lifted from a running container: that is an
// error here, unless the container had none (startedMem, the limit it was
// started with, is 0), when memory is left alone. A pure function; online
// is the host's online CPU list.
func updateResources(l runner.Limits, online []int, startedMem int64) (container.Resources, error) {
	var r container.Resources
	if l.CPUs < 0 {
		return r, fmt.Errorf("limits: cpus=%g is negative", l.CPUs)
	}
	cpus := l.CPUSet
	if cpus == nil {
		var err error
		if cpus, err = runner.CPUSetFor(l.CPUs, online); err != nil {
			return r, fmt.Errorf("limits: %w", err)
		}
	}
	if len(cpus) == 0 {
		return r, fmt.Errorf("limits: no CPU to run on")
	}
	r.CpusetCpus = runner.FormatCPUSet(cpus)
	r.CPUPeriod, r.CPUQuota = runner.DefaultCFSPeriodUS, -1
	if l.CPUs > 0 {
		r.CPUQuota = runner.QuotaFor(l.CPUs, runner.DefaultCFSPeriodUS)
		if r.CPUQuota < 1000 {
			return r, fmt.Errorf("limits: cpus=%g gives a CFS quota of %dus, below the kernel's 1000us minimum", l.CPUs, r.CPUQuota)
		}
	}
	switch {
	case l.MemLimitBytes < 0:
		return r, fmt.Errorf("limits: mem=%d is negative", l.MemLimitBytes)
	case l.MemLimitBytes == 0 && startedMem == 0:
		return r, nil
	case l.MemLimitBytes == 0:
		return r, fmt.Errorf("limits: the Engine cannot lift a running container's memory limit (mem=unlimited); restart the job instead")
	case l.MemLimitBytes < 6<<20:
		return r, fmt.Errorf("limits: mem=%d bytes is below Docker's 6MiB minimum", l.MemLimitBytes)
	}
	r.Memory, r.MemorySwap = l.MemLimitBytes, l.MemLimitBytes
	return r, nil
}

// Update changes the running container's cpuset, CFS quota and memory
// limit through the Engine API's update call (runner.Updater). A
// container started without a memory limit keeps none: pass
// MemLimitBytes 0 for it.
func (h *handle) Update(ctx context.Context, l runner.Limits) error {
	what := fmt.Sprintf("update job %q to %s: container %.12s", h.job.Name, l, h.id)
	api, ok := h.r.api.(updateAPI)
	if !ok {
		return fmt.Errorf("%s: the Docker client cannot update containers", what)
	}
	h.mu.Lock()
	finished := h.finished
	h.mu.Unlock()
	if finished {
		return fmt.Errorf("%s: %w", what, runner.ErrNotRunning)
	}
	online, err := onlineCPUs(h.r.opts.SysRoot)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	res, err := updateResources(l, online, h.job.Limits.MemLimitBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	out, err := api.ContainerUpdate(ctx, h.id, client.ContainerUpdateOptions{Resources: &res})
	if err != nil {
		return h.r.explain(what, err)
	}
	if len(out.Warnings) > 0 && h.job.Stderr != nil {
		for _, w := range out.Warnings {
			fmt.Fprintf(h.job.Stderr, "synergy: docker: container %.12s: update warning: %s\n", h.id, w)
		}
	}
	return nil
}
