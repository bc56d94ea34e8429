// Package reap removes what synergy runs that are no longer alive left on
// this host: job cgroups (runner/local), containers (runner/docker) and work
// directories ($TMPDIR/synergy-profile-PID-START-*). Each carries its
// owner's PID and start time (runner/owner), so a live run's are never
// touched. Every profile run calls Orphans first, `synergy cleanup` calls it
// on demand, and a watchdog process (Watch) calls it the moment the run that
// started it dies, however it dies (kill -9 included).
package reap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/synergy-sched/synergy/runner/docker"
	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/owner"
)

// Options say where to look.
type Options struct {
	// Docker also reaps containers; when the daemon cannot be reached that
	// part is skipped with a note, unless RequireDocker.
	Docker        bool
	RequireDocker bool
	// DockerHost is the daemon address ("" is $DOCKER_HOST or the local
	// socket).
	DockerHost string
	// TempDir holds the work directories ("" is os.TempDir()).
	TempDir string
}

// Report is what Orphans did.
type Report struct {
	// Removed lists one line per thing removed ("cgroup /sys/fs/...",
	// "container ID (job, point): why", "temp dir /tmp/...").
	Removed []string `json:"removed"`
	// Skipped says which kinds were not looked at, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// dockerTimeout bounds connecting to the daemon and listing containers.
const dockerTimeout = 20 * time.Second

// Orphans removes the cgroups, containers (with Options.Docker) and work
// directories of synergy runs that are no longer alive. Kinds this host
// cannot have (no cgroups, not root) are skipped with a note; the error
// joins what could not be removed.
func Orphans(ctx context.Context, o Options) (Report, error) {
	var rep Report
	var errs []error
	if lr, err := local.New(local.Options{ReapOnly: true}); err != nil {
		rep.Skipped = append(rep.Skipped, "cgroups: "+err.Error())
	} else {
		dirs, err := lr.ReapOrphans()
		_ = lr.Close()
		for _, d := range dirs {
			rep.Removed = append(rep.Removed, "cgroup "+d)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.Docker {
		lines, skipped, err := containers(ctx, o)
		rep.Removed = append(rep.Removed, lines...)
		if skipped != "" {
			rep.Skipped = append(rep.Skipped, skipped)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	dirs, err := owner.ReapTempDirs(o.TempDir, owner.TempDirPrefix)
	for _, d := range dirs {
		rep.Removed = append(rep.Removed, "temp dir "+d)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

func containers(ctx context.Context, o Options) (removed []string, skipped string, err error) {
	dr, err := docker.New(docker.Options{Host: o.DockerHost})
	if err != nil {
		if o.RequireDocker {
			return nil, "", err
		}
		return nil, "containers: " + err.Error(), nil
	}
	defer dr.Close()
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	removed, err = dr.ReapOrphans(ctx)
	if err != nil {
		err = fmt.Errorf("containers: %w", err)
	}
	return removed, "", err
}

// DockerSocketPresent reports whether a local Docker daemon may be there
// ($DOCKER_HOST set, or /var/run/docker.sock exists), so that cleanup
// without an explicit choice tries containers only where it can.
func DockerSocketPresent() bool {
	if os.Getenv("DOCKER_HOST") != "" {
		return true
	}
	_, err := os.Stat("/var/run/docker.sock")
	return err == nil
}
