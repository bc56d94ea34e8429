package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner/owner"
)

// A job running as root can move a process of its own out of its cgroup
// (write its PID to another cgroup's cgroup.procs), where killing the
// job's cgroup does not reach it. So the runner is its process's child
// subreaper (PR_SET_CHILD_SUBREAPER): a process whose parent dies is
// reparented to it instead of to init, a daemon that double-forked
// included. When a job ends and its cgroup is empty, every child of this
// process that the runner did not start itself (started) and that began
// after the job did, and is in no job cgroup of this process (another job
// of this runner may run beside it, its orphans reparented here too), is a
// process that left the job's cgroup: it is killed, reaped and named in
// the job's Result.

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// becomeSubreaper makes this process the child subreaper of its
// descendants, once.
func becomeSubreaper() error {
	subreaperOnce.Do(func() { subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
	return subreaperErr
}

// started are the processes the runner started itself (jobs, pins).
var started struct {
	mu   sync.Mutex
	pids map[int]bool
}

func markStarted(pid int) {
	started.mu.Lock()
	defer started.mu.Unlock()
	if started.pids == nil {
		started.pids = map[int]bool{}
	}
	started.pids[pid] = true
}

func unmarkStarted(pid int) {
	started.mu.Lock()
	defer started.mu.Unlock()
	delete(started.pids, pid)
}

func isStarted(pid int) bool {
	started.mu.Lock()
	defer started.mu.Unlock()
	return started.pids[pid]
}

// escapeRounds bounds how often killEscaped looks again: killing an
// escaped process reparents its own children to this one.
const escapeRounds = 10

// killEscaped kills and reaps the children of this process that it did
// not start and that began at or after since (the job's start, in
// clock ticks since boot), and returns them as "PID (comm)".
func killEscaped(procRoot string, since uint64) ([]string, error) {
	self := os.Getpid()
	me, err := owner.Self()
	if err != nil {
		return nil, err
	}
	ours := "-" + me.String() + "-" // in the name of every job cgroup of this process
	var killed []string
	var errs []error
	for range escapeRounds {
		kids, err := childrenOf(procRoot, self)
		if err != nil {
			return killed, err
		}
		n := 0
		for _, k := range kids {
			if isStarted(k.pid) || k.start < since {
				continue
			}
			if k.state == "Z" { // an orphan that has exited: reap it, nothing to kill
				reap(k.pid)
				continue
			}
			if cg, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(k.pid), "cgroup")); err == nil && strings.Contains(string(cg), ours) {
				continue // in a job cgroup of this process: not escaped
			}
			n++
			killed = append(killed, fmt.Sprintf("%d (%s)", k.pid, k.comm))
			if err := unix.Kill(k.pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d: %w", k.pid, err))
			}
			reap(k.pid)
		}
		if n == 0 {
			break
		}
	}
	return killed, errors.Join(errs...)
}

// reap waits for a killed child, a second at most.
func reap(pid int) {
	for range 100 {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if got == pid || err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type child struct {
	pid         int
	comm, state string
	start       uint64
}

// childrenOf lists the processes whose parent is ppid, from procRoot.
func childrenOf(procRoot string, ppid int) ([]child, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 20 {
			continue
		}
		if p, _ := strconv.Atoi(f[1]); p != ppid {
			continue
		}
		st, _ := strconv.ParseUint(f[19], 10, 64)
		out = append(out, child{pid: pid, comm: s[open+1 : close], state: f[0], start: st})
	}
	return out, nil
}

// startTicks is process pid's start time in clock ticks since boot (0 when
// it cannot be read: nothing is then left out for being older).
func startTicks(procRoot string, pid int) uint64 {
	id, err := owner.Of(procRoot, pid)
	if err != nil {
		return 0
	}
	return id.Start
}
