package runner

import (
	"context"
	"errors"
)

// Updater is a Handle whose CPU and memory limits can change while the job
// runs. Runners whose handles cannot do it simply do not implement it;
// callers find out with AsUpdater.
type Updater interface {
	// Update replaces the running job's CPU budget (cpuset and CFS quota;
	// CPUs 0 lifts both) and its memory limit (0 lifts it) now; the read
	// limit stays as the job was started with. The kernel applies the
	// change at once: the job's threads follow a new cpuset (their
	// affinity is the cgroup's), a new quota counts from the next CFS
	// period, and a lowered memory limit reclaims page cache down to it
	// (or fails when it cannot, leaving the old limit). It returns
	// ErrNotRunning once the job has ended.
	Update(ctx context.Context, l Limits) error
}

// ErrNotRunning is returned by Updater.Update for a job that has ended.
var ErrNotRunning = errors.New("the job is not running")

// AsUpdater returns h's Updater, or nil when its runner cannot change the
// limits of a running job.
func AsUpdater(h Handle) Updater {
	u, _ := h.(Updater)
	return u
}
