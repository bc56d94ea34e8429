package local

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner/cgroupfs"
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
// process that left the job's cgroup: it is killed with every process
// below it, reaped and named in the job's Result. "In a job cgroup of this
// process" is decided by exact paths (liveJobs in tree.go), so a cgroup a
// job names like a run's does not hide a process; such a cgroup that no
// live run holds is removed once its processes are dead.

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

// escapeRounds bounds how often killEscaped looks again: a process may
// fork while its tree is being killed.
const escapeRounds = 10

// killEscaped kills and reaps the processes that left the job's cgroup:
// each child of this process that it did not start, that began at or
// after since (the job's start, in clock ticks since boot) and that is in
// no live job cgroup of this process (liveJobs: exact paths, not names),
// with all its descendants. It returns them as "PID (comm)", then removes
// the cgroups they were in that are named like a run's and that no live
// run holds (a job's decoy: see tree.go).
func (r *Runner) killEscaped(since uint64) ([]string, error) {
	procRoot := r.opts.ProcRoot
	self := os.Getpid()
	var killed []string
	var errs []error
	decoys := map[string]bool{}
	named := map[int]bool{} // a process still dying is looked at again, named once
	for range escapeRounds {
		procs, err := listProcs(procRoot)
		if err != nil {
			return killed, err
		}
		kids := map[int][]int{}
		for pid, p := range procs {
			kids[p.ppid] = append(kids[p.ppid], pid)
		}
		var victims []int
		for _, pid := range kids[self] {
			k := procs[pid]
			if isStarted(pid) || k.start < since {
				continue
			}
			if k.state == "Z" { // an orphan that has exited: reap it, nothing to kill
				reap(pid)
				continue
			}
			b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
			if err != nil {
				continue // gone
			}
			m, err := cgroupfs.ParseProcCgroup(b)
			if err != nil {
				continue
			}
			out := outsideLiveJobs(membershipByKey(m))
			if len(out) == 0 {
				continue // in a job cgroup of this process: not escaped
			}
			for k, p := range out {
				if h, ok := r.ctl[k]; ok {
					if d, all := r.decoyDir(h.Root, p); d != "" {
						decoys[d] = decoys[d] || all
					}
				}
			}
			for _, d := range descendants(kids, pid) {
				victims = append(victims, d)
				if !named[d] {
					named[d] = true
					killed = append(killed, fmt.Sprintf("%d (%s)", d, quoteName(procs[d].comm)))
				}
			}
		}
		if len(victims) == 0 {
			break
		}
		for _, pid := range victims {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
			}
		}
		for _, pid := range victims {
			if procs[pid].ppid == self {
				reap(pid)
			}
		}
	}
	errs = append(errs, removeDecoys(decoys, named)...)
	return killed, errors.Join(errs...)
}

// removeDecoys removes the decoy cgroups killEscaped found (decoys: dir ->
// whether all in it may be killed), once the processes it killed (named)
// have left them.
func removeDecoys(decoys map[string]bool, named map[int]bool) []error {
	var errs []error
	for _, d := range slices.Sorted(maps.Keys(decoys)) {
		if !decoys[d] { // named after another live process: only what is empty goes
			for range emptyPollTries { // once the processes killed here have left it
				pids, _ := subtreeProcs(d)
				if !slices.ContainsFunc(pids, func(p int) bool { return named[p] }) {
					break
				}
				time.Sleep(emptyPollInterval)
			}
			removeEmptySubtree(d)
			continue
		}
		if err := killUntilEmpty(func() ([]int, error) { return subtreeProcs(d) }); err != nil {
			errs = append(errs, fmt.Errorf("kill the processes in cgroup %s: %w", quoteName(d), err))
			continue
		}
		if err := removeSubtree(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// removeEmptySubtree removes the empty cgroups of dir's subtree, deepest
// first, dir included when it empties, each tried once.
func removeEmptySubtree(dir string) {
	dirs, _ := subtreeDirs(dir)
	for _, d := range dirs {
		_ = unix.Rmdir(d)
	}
}

// membershipByKey maps a process's cgroups to this package's hierarchy
// keys: each v1 controller ("cpu,cpuacct" gives both), cgroupfs.KeyUnified.
func membershipByKey(m cgroupfs.Membership) map[string]string {
	out := map[string]string{}
	for c, p := range m.V1 {
		for _, one := range strings.Split(c, ",") {
			out[one] = p
		}
	}
	if m.Unified != "" {
		out[cgroupfs.KeyUnified] = m.Unified
	}
	return out
}

// decoyDir is the topmost directory on p (a path inside the hierarchy at
// root) named like a job cgroup of a run with this runner's prefix, when
// that run does not hold it (heldBy): a cgroup a job made under a run's
// name, to be removed. all says whatever else is in it may be killed too:
// it is named after this process (whose job cgroups are all in liveJobs)
// or after one that is gone; one named after another live process may be
// that process's (a synergy that holds no descriptors), so only what is
// empty of it goes. "" when there is none.
func (r *Runner) decoyDir(root, p string) (dir string, all bool) {
	parts := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	for i := range parts {
		id, ok := runNamed(parts[i], r.opts.Prefix)
		if !ok {
			continue
		}
		d := filepath.Join(append([]string{root}, parts[:i+1]...)...)
		alive := owner.Alive(r.opts.ProcRoot, id)
		if alive && heldBy(r.opts.ProcRoot, id.PID, d) {
			return "", false // a live run's cgroup: its own runner ends what is in it
		}
		me, err := owner.Self()
		return d, !alive || (err == nil && me == id)
	}
	return "", false
}

// descendants lists pid and every process below it (kids: parent ->
// children), parents first.
func descendants(kids map[int][]int, pid int) []int {
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out); i++ {
		for _, k := range kids[out[i]] {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
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

type proc struct {
	ppid        int
	comm, state string
	start       uint64
}

// listProcs reads every process's parent, name, state and start from
// procRoot.
func listProcs(procRoot string) (map[int]proc, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		if p, ok := parseStat(string(b)); ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStat reads "pid (comm) state ppid ... starttime ...": comm may
// hold spaces and parentheses.
func parseStat(s string) (proc, bool) {
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return proc{}, false
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, false
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return proc{ppid: ppid, comm: s[open+1 : close], state: f[0], start: st}, true
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
