package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/synergy-sched/synergy/runner"
)

// ProbeMnt is where Job.ProbeDir (the injected DataLoader probe) is mounted
// read-only; paths below ProbeDir in Argv and Env are rewritten to it.
const ProbeMnt = "/synergy-probe"

// pathListVars hold lists of paths (':'-separated): each element is
// rewritten on its own, so PYTHONPATH=<ProbeDir>:/opt/lib becomes
// /synergy-probe:/opt/lib.
var pathListVars = map[string]bool{"PYTHONPATH": true, "LD_LIBRARY_PATH": true, "PATH": true}

// envValue rewrites the value of variable k: a path, or for pathListVars
// each element of the list. moved reports whether anything was rewritten.
func (m pathMap) envValue(k, v string) (string, bool) {
	if !pathListVars[k] || !strings.Contains(v, ":") {
		return m.path(v)
	}
	parts := strings.Split(v, ":")
	moved := false
	for i, p := range parts {
		var ok bool
		if parts[i], ok = m.path(p); ok {
			moved = true
		}
	}
	return strings.Join(parts, ":"), moved
}

// probeMount is the read-only bind mount of Job.ProbeDir, if any.
func probeMount(job runner.Job) (*mount.Mount, error) {
	if job.ProbeDir == "" {
		return nil, nil
	}
	if !filepath.IsAbs(job.ProbeDir) || filepath.Clean(job.ProbeDir) == "/" {
		return nil, fmt.Errorf("job ProbeDir %q: want an absolute directory other than /", job.ProbeDir)
	}
	return &mount.Mount{Type: mount.TypeBind, Source: filepath.Clean(job.ProbeDir), Target: ProbeMnt, ReadOnly: true}, nil
}

// chainImageEnv appends the image's own PYTHONPATH to a job's PYTHONPATH
// (the container's value would otherwise replace the image's), so that a
// framework image that puts its packages there still finds them behind the
// probe. An image that cannot be inspected is left to fail at create.
func (r *Runner) chainImageEnv(ctx context.Context, cfg *container.Config) {
	i := -1
	for j, kv := range cfg.Env {
		if strings.HasPrefix(kv, "PYTHONPATH=") {
			i = j
		}
	}
	if i < 0 {
		return
	}
	ins, err := r.images.ImageInspect(ctx, cfg.Image)
	if err != nil || ins.Config == nil {
		return
	}
	for _, kv := range ins.Config.Env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok && v != "" {
			cfg.Env[i] += ":" + v
		}
	}
}
