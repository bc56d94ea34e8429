package main

import (
	"context"
	"fmt"

	"github.com/synergy-sched/synergy/profiler"
	"github.com/synergy-sched/synergy/profiler/host"
	"github.com/synergy-sched/synergy/profiler/nvml"
	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/runner/docker"
	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/pagecache"
	"github.com/synergy-sched/synergy/sensitivity"
)

// environment is what a profile runs with on this host.
type environment struct {
	runner   runner.Runner
	cache    profiler.Cache
	host     sensitivity.HostInfo
	gpu      sensitivity.GPUInfo
	samplers []sample.Sampler
	warnings []string
	closers  []func()
}

func (e *environment) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// coldReadProbeBytes is how much of the evicted dataset is read to measure
// the disk's cold read bandwidth.
const coldReadProbeBytes = 256 << 20

// describeHost describes the machine: hostname, CPU model, logical CPUs,
// DRAM and the cgroup mode.
func describeHost(dataDir string) (sensitivity.HostInfo, error) {
	h, err := host.Info(host.Options{DiskPath: dataDir})
	if err != nil {
		return h, err
	}
	h.CgroupMode = cgroupfs.DetectMode("/proc", "/sys/fs/cgroup")
	return h, nil
}

// probeEnvironment detects the GPU, builds the runner and measures the
// dataset's cold read bandwidth on host h.
func probeEnvironment(ctx context.Context, o profileOptions, h sensitivity.HostInfo) (*environment, error) {
	env := &environment{cache: pageCache{}, host: h}

	det, client := nvml.Detect()
	if client != nil {
		env.closers = append(env.closers, func() { client.Close() })
	}
	env.gpu = det.GPUInfo()
	if det.Mode != sensitivity.GPUModeNVML {
		if o.requireGPU {
			env.close()
			return nil, fmt.Errorf("--%s: %w", flagRequireGPU, det.RequireGPU())
		}
		env.warnings = append(env.warnings, "no GPU sampled through NVML: "+det.Reason+
			" (a job that emulates its GPU step is reported as \"emulated\")")
	} else {
		env.samplers = append(env.samplers, nvml.NewSampler(client, nil, nil))
	}
	hs, err := host.NewSampler(host.Options{DiskPath: o.cfg.DataDir})
	if err != nil {
		env.warnings = append(env.warnings, "host sampler: "+err.Error())
	} else {
		env.samplers = append(env.samplers, hs)
	}

	switch o.runnerName {
	case "local":
		r, err := local.New(local.Options{Driver: o.cgroup.driver, Parent: o.cgroup.parent})
		if err != nil {
			env.close()
			return nil, fmt.Errorf("--%s=local (--%s %s): %w", flagRunner, flagCgroupDriver, o.cgroup.driver, err)
		}
		env.closers = append(env.closers, func() { _ = r.Close() })
		env.host.CgroupPlacement = r.Placement()
		env.runner = r
	case "docker":
		gpus := 0
		if det.Mode == sensitivity.GPUModeNVML {
			gpus = o.cfg.GPUs
		}
		r, err := docker.New(docker.Options{Image: o.dockerImg, ContainerMnt: o.mount, ShmSizeBytes: o.shmBytes, GPUs: gpus})
		if err != nil {
			env.close()
			return nil, fmt.Errorf("--%s=docker: %w", flagRunner, err)
		}
		env.closers = append(env.closers, func() { r.Close() })
		if err := r.CheckImage(ctx); err != nil {
			env.close()
			return nil, fmt.Errorf("--%s: %w", flagDockerImg, err)
		}
		env.runner = r
	}

	if o.cfg.DataDir != "" && !o.cfg.Resume {
		mbps, _, err := pagecache.ColdReadMBPerS(o.cfg.DataDir, coldReadProbeBytes)
		if err != nil {
			env.close()
			return nil, fmt.Errorf("--%s: measure cold read bandwidth: %w", flagData, err)
		}
		env.host.ColdReadMBPerS = mbps
	}
	return env, nil
}

// pageCache adapts runner/pagecache to profiler.Cache.
type pageCache struct{}

func (pageCache) Evict(dir string) (int, error)             { return pagecache.Evict(dir) }
func (pageCache) Resident(dir string) (int64, int64, error) { return pagecache.Resident(dir) }
func (pageCache) Warm(dir string) error                     { _, err := pagecache.Warm(dir); return err }
