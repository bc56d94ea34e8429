package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/runner"
)

// Bounds on the calls made while tearing a container down, after the
// caller's context may already be gone.
const (
	cleanupTimeout  = 30 * time.Second
	logDrainTimeout = 10 * time.Second
)

// handle is one running container. A goroutine (run) owns its end: it waits
// for the container to stop (killing it if the Start context is cancelled),
// drains the logs, inspects, and removes it, whether or not Wait is called.
type handle struct {
	r     *Runner
	id    string
	job   runner.Job
	start time.Time

	dirs map[string]string // cgroup directories; nil: use the stats API

	logsDone  chan struct{}
	logCancel context.CancelFunc
	stopPoll  chan struct{}
	done      chan struct{}

	mu        sync.Mutex
	last      runner.Stats
	frozen    bool // last was read just before our kill: keep it
	stopped   bool
	cancelled error
	finished  bool
	result    runner.Result
	err       error
}

func newHandle(r *Runner, id string, job runner.Job) *handle {
	return &handle{
		r: r, id: id, job: job,
		logsDone: make(chan struct{}),
		stopPoll: make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// ID is the container's ID.
func (h *handle) ID() string { return h.id }

// begin starts the container, attaches its log stream and finds its
// cgroup. On error the caller removes the container.
func (h *handle) begin(ctx context.Context) error {
	what := fmt.Sprintf("job %q (%s): container %.12s", h.job.Name, h.job.Limits, h.id)
	h.start = time.Now()
	if _, err := h.r.api.ContainerStart(ctx, h.id, client.ContainerStartOptions{}); err != nil {
		return h.r.explain(what+": start", err)
	}
	logCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.logCancel = cancel
	if h.job.Stdout == nil && h.job.Stderr == nil {
		close(h.logsDone)
	} else {
		rc, err := h.r.api.ContainerLogs(logCtx, h.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
		if err != nil {
			close(h.logsDone)
			return h.r.explain(what+": attach logs", err)
		}
		go h.copyLogs(rc)
	}
	ins, err := h.r.api.ContainerInspect(ctx, h.id, client.ContainerInspectOptions{})
	if err != nil {
		return h.r.explain(what+": inspect", err)
	}
	if st := ins.Container.State; st != nil && st.Pid > 0 {
		// Unreadable (a remote daemon, another PID namespace): fall back
		// to the stats API.
		if dirs, err := cgroupPaths(h.r.opts.ProcRoot, st.Pid); err == nil {
			h.dirs = dirs
		}
	}
	if h.dirs != nil {
		go h.poll()
	}
	return nil
}

func (h *handle) copyLogs(rc io.ReadCloser) {
	defer close(h.logsDone)
	defer rc.Close()
	out, errw := h.job.Stdout, h.job.Stderr
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	_, _ = stdcopy.StdCopy(out, errw, rc)
}

// poll samples the cgroup so that Final is recent when the container exits
// on its own (its cgroup disappears with it).
func (h *handle) poll() {
	t := time.NewTicker(h.r.opts.StatsInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stopPoll:
			return
		case <-t.C:
			_, _ = h.sample()
		}
	}
}

// sample reads the counters and keeps them as the latest.
func (h *handle) sample() (runner.Stats, error) {
	var s runner.Stats
	var err error
	now := time.Now()
	if h.dirs != nil {
		s, err = readCgroupStats(h.dirs, now)
	} else {
		s, err = h.apiStats()
	}
	if err != nil {
		return s, err
	}
	h.mu.Lock()
	if !h.finished && !h.frozen {
		h.last = s
	}
	h.mu.Unlock()
	return s, nil
}

func (h *handle) apiStats() (runner.Stats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	res, err := h.r.api.ContainerStats(ctx, h.id, client.ContainerStatsOptions{})
	if err != nil {
		return runner.Stats{}, h.r.explain("container stats", err)
	}
	defer res.Body.Close()
	var doc container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		return runner.Stats{}, fmt.Errorf("decode container stats: %w", err)
	}
	return statsFromAPI(doc, time.Now()), nil
}

// Stats reads the container's current counters; after the container has
// ended it returns Result.Final.
func (h *handle) Stats() (runner.Stats, error) {
	h.mu.Lock()
	if h.finished {
		s := h.result.Final
		h.mu.Unlock()
		return s, nil
	}
	h.mu.Unlock()
	s, err := h.sample()
	if err != nil {
		return s, fmt.Errorf("job %q: container %.12s: %w", h.job.Name, h.id, err)
	}
	return s, nil
}

// CgroupPaths are the container's cgroup directories: controller names on
// v1, cgroupfs.KeyUnified on v2; empty when they cannot be read from this
// host.
func (h *handle) CgroupPaths() map[string]string {
	out := make(map[string]string, len(h.dirs))
	for k, v := range h.dirs {
		out[k] = v
	}
	return out
}

// Stop kills the container now (SIGKILL), after taking a last sample of its
// counters for Result.Final. Stopping a container that has already ended is
// not an error.
func (h *handle) Stop() error {
	return h.kill(nil)
}

// kill samples, then kills. cause is the context error when the Start
// context was cancelled.
func (h *handle) kill(cause error) error {
	h.mu.Lock()
	finished := h.finished
	h.mu.Unlock()
	if finished {
		return nil
	}
	_, _ = h.sample()
	// Samples taken while the kill tears the container down would show
	// its memory being freed; Final is the state the job was stopped in.
	// The kill is marked before it is sent: the engine may report the
	// container's exit (137), and run collect it, before ContainerKill
	// returns; marked after, a deliberate stop read as a crash under load.
	h.mu.Lock()
	h.frozen = true
	wasStopped, wasCancelled := h.stopped, h.cancelled
	h.stopped = true
	if cause != nil {
		h.cancelled = cause
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := h.r.api.ContainerKill(ctx, h.id, client.ContainerKillOptions{Signal: "KILL"})
	if err == nil {
		return nil
	}
	h.mu.Lock()
	h.stopped, h.cancelled = wasStopped, wasCancelled // this kill reached nothing
	h.mu.Unlock()
	if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		return nil // already ended (409 "is not running") or removed
	}
	return fmt.Errorf("job %q: kill container %.12s: %w", h.job.Name, h.id, err)
}

// Wait blocks until the container has ended and been removed.
func (h *handle) Wait() (runner.Result, error) {
	<-h.done
	return h.result, h.err
}

// run waits for the container to stop, then collects its result and
// removes it. It is the only writer of result and err.
func (h *handle) run(ctx context.Context) {
	exitCode, errs := h.waitExit(ctx)
	wall := time.Since(h.start).Seconds()
	close(h.stopPoll)
	h.drainLogs()
	res, err := h.collect(exitCode, wall)
	if err != nil {
		errs = append(errs, err)
	}
	if err := h.remove(); err != nil {
		errs = append(errs, err)
	}
	h.mu.Lock()
	cancelErr := h.cancelled
	h.mu.Unlock()
	if cancelErr != nil {
		errs = append(errs, fmt.Errorf("cancelled: %w", cancelErr))
	}
	var outErr error
	if len(errs) > 0 {
		outErr = fmt.Errorf("job %q (%s): container %.12s: %w", h.job.Name, h.job.Limits, h.id, errors.Join(errs...))
	}
	h.mu.Lock()
	h.finished, h.result, h.err = true, res, outErr
	h.mu.Unlock()
	close(h.done)
}

// waitExit waits until the container is no longer running, killing it if
// ctx is cancelled first, and returns the exit status the engine gave.
func (h *handle) waitExit(ctx context.Context) (int, []error) {
	var errs []error
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWait()
	w := h.r.api.ContainerWait(waitCtx, h.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	cancelled := ctx.Done()
	for {
		select {
		case <-cancelled:
			cancelled = nil
			if err := h.kill(ctx.Err()); err != nil {
				errs = append(errs, err)
			}
		case res := <-w.Result:
			if res.Error != nil && res.Error.Message != "" {
				errs = append(errs, fmt.Errorf("wait: %s", res.Error.Message))
			}
			return int(res.StatusCode), errs
		case err := <-w.Error:
			return 0, append(errs, h.r.explain("wait", err))
		}
	}
}

// drainLogs waits for the log stream to end, for at most logDrainTimeout.
func (h *handle) drainLogs() {
	select {
	case <-h.logsDone:
	case <-time.After(logDrainTimeout):
		h.logCancel()
		<-h.logsDone
	}
	if h.logCancel != nil {
		h.logCancel()
	}
}

// collect builds the Result of an ended container: exit status, OOM kill
// and run time from the engine (exitCode and wall when it cannot say), the
// last counters sampled.
func (h *handle) collect(exitCode int, wall float64) (runner.Result, error) {
	res := runner.Result{ExitCode: exitCode}
	var inspectErr error
	ictx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	ins, err := h.r.api.ContainerInspect(ictx, h.id, client.ContainerInspectOptions{})
	cancel()
	if err != nil {
		inspectErr = h.r.explain("inspect", err)
	} else if st := ins.Container.State; st != nil {
		res.ExitCode = st.ExitCode
		res.OOMKilled = st.OOMKilled
		if d, ok := runSeconds(st.StartedAt, st.FinishedAt); ok {
			wall = d
		}
	}
	res.WallSeconds = wall
	h.mu.Lock()
	res.Stopped = h.stopped
	res.Final = h.last
	h.mu.Unlock()
	if res.OOMKilled && res.Final.OOMEvents == 0 {
		// The cgroup, and its oom_kill counter, went with the container
		// before a sample could see it; the engine saw at least one.
		res.Final.OOMEvents = 1
		res.Final.Has |= runner.StatOOMEvents
	}
	// Docker reports death by SIGKILL as 128+9. Where we know the signal
	// came (our kill, the OOM killer) report it as the local runner does.
	if res.ExitCode == 137 && (res.Stopped || res.OOMKilled) {
		res.ExitCode, res.Signal = -1, "killed"
	}
	return res, inspectErr
}

// abandon removes a container that failed to start properly.
func (h *handle) abandon() error {
	if h.logCancel != nil {
		h.logCancel()
	}
	return h.remove()
}

// remove deletes the container and its anonymous volumes, killing it first
// if it still runs.
func (h *handle) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := h.r.api.ContainerRemove(ctx, h.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %.12s: %w", h.id, err)
	}
	return nil
}

// runSeconds is FinishedAt − StartedAt from the engine's RFC 3339 times.
func runSeconds(started, finished string) (float64, bool) {
	a, err1 := time.Parse(time.RFC3339Nano, started)
	b, err2 := time.Parse(time.RFC3339Nano, finished)
	if err1 != nil || err2 != nil || a.IsZero() || b.Before(a) || a.Year() < 2000 {
		return 0, false
	}
	return b.Sub(a).Seconds(), true
}
