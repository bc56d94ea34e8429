package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner/owner"
)

// A job running as root can make cgroups of its own and move its
// processes into them: below its job cgroup (a sub-cgroup: still under the
// job's limits, but a kill of the job's cgroup alone does not reach it, and
// the job cgroup cannot be removed while it is there), or anywhere else in
// the trees, under a name made to look like a run's. So the runner:
//
//   - reads, kills and removes a job's cgroup as the whole subtree
//     (subtreeProcs, removeSubtree), naming the processes it finds below
//     the job's own directory;
//   - keeps the cgroups of this process's live jobs in a registry (liveJobs)
//     that says exactly which processes are inside a job of this process
//     (escape.go), where a name that contains this process's PID and start
//     proves nothing;
//   - holds an open descriptor on each job cgroup it names after itself for
//     the group's life (holdDirs), so that anyone (another run's reaper,
//     `synergy cleanup`) can tell a live run's cgroup, which its owner
//     holds, from one a job made under such a name, which no owner holds
//     (heldBy, reap.go).

// subtreeMaxDirs bounds how many cgroups below one job's directory are
// looked at (a job could make any number).
const subtreeMaxDirs = 10000

// subtreeDirs lists dir and every cgroup below it, deepest first, at most
// subtreeMaxDirs. A missing dir has none.
func subtreeDirs(dir string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if p == dir {
				return err
			}
			return nil // removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		if len(dirs) >= subtreeMaxDirs {
			return fmt.Errorf("cgroup %s: more than %d cgroups below it", dir, subtreeMaxDirs)
		}
		dirs = append(dirs, p)
		return nil
	})
	slices.SortStableFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs, err
}

// subtreeProcs lists the processes in dir and in every cgroup below it.
// On an error (more than subtreeMaxDirs cgroups, a cgroup it cannot read)
// it still returns the processes it found, so that a kill reaches them.
func subtreeProcs(dir string) ([]int, error) {
	dirs, err := subtreeDirs(dir)
	errs := []error{err}
	var all []int
	for _, d := range dirs {
		pids, err := readProcs(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, pids...)
	}
	slices.Sort(all)
	return slices.Compact(all), errors.Join(errs...)
}

// nestedProcs names the processes in the cgroups below top (not in top
// itself, nor in the directories own) as "PID (comm) in sub-cgroup REL of
// its job's cgroup", for the warning that a job moved them there.
func nestedProcs(procRoot, top string, own ...string) []string {
	dirs, _ := subtreeDirs(top)
	var out []string
	for _, d := range dirs {
		if d == top || slices.Contains(own, d) {
			continue
		}
		pids, _ := readProcs(d)
		rel, _ := filepath.Rel(top, d)
		for _, pid := range pids {
			out = append(out, fmt.Sprintf("%d (%s) in sub-cgroup %s of its job's cgroup", pid, commOf(procRoot, pid), quoteName(rel)))
		}
	}
	return out
}

// removeSubtree removes dir and every cgroup below it, deepest first; they
// must be empty.
func removeSubtree(dir string) error {
	dirs, err := subtreeDirs(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		if err := rmdirWhenEmpty(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// liveJobs are the cgroups of this process's live jobs: for each hierarchy
// key ("memory", ..., cgroupfs.KeyUnified), the paths inside it as
// /proc/PID/cgroup shows them. A process is inside a job of this process
// when, in each hierarchy it has a live job in, its path is one of these or
// below one.
var liveJobs struct {
	mu   sync.Mutex
	rels map[string]map[string]int
}

// registerJob adds a job's cgroups (key -> path inside the hierarchy);
// the returned func removes them again.
func registerJob(rels map[string]string) func() {
	liveJobs.mu.Lock()
	defer liveJobs.mu.Unlock()
	if liveJobs.rels == nil {
		liveJobs.rels = map[string]map[string]int{}
	}
	for k, p := range rels {
		if liveJobs.rels[k] == nil {
			liveJobs.rels[k] = map[string]int{}
		}
		liveJobs.rels[k][path.Clean(p)]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			liveJobs.mu.Lock()
			defer liveJobs.mu.Unlock()
			for k, p := range rels {
				p = path.Clean(p)
				if liveJobs.rels[k][p]--; liveJobs.rels[k][p] <= 0 {
					delete(liveJobs.rels[k], p)
				}
			}
		})
	}
}

// outsideLiveJobs returns, for each hierarchy key with a live job of this
// process, the path of a process's membership (key -> path) that lies in
// no live job's cgroup; empty when the process is inside a job.
func outsideLiveJobs(member map[string]string) map[string]string {
	liveJobs.mu.Lock()
	defer liveJobs.mu.Unlock()
	out := map[string]string{}
	for k, p := range member {
		jobs, ok := liveJobs.rels[k]
		if !ok || len(jobs) == 0 {
			continue
		}
		if !within(p, jobs) {
			out[k] = p
		}
	}
	return out
}

// within reports whether p is one of dirs or below one.
func within(p string, dirs map[string]int) bool {
	p = path.Clean(p)
	for d := p; ; d = path.Dir(d) {
		if dirs[d] > 0 {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// holdDirs opens each dir (O_PATH) and returns the descriptors: held for
// the job cgroup's life, they prove to other runs that its owner made it
// (heldBy).
func holdDirs(dirs ...string) ([]int, error) {
	var fds []int
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			releaseDirs(fds)
			return nil, fmt.Errorf("hold cgroup %s: %w", d, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func releaseDirs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// heldFDMax bounds how many descriptors of another process heldBy looks at.
const heldFDMax = 1 << 16

// heldBy reports whether process pid holds an open descriptor on dir (the
// same inode), as a runner holds each job cgroup it made (holdDirs). What
// cannot be looked at (another user's descriptors, when not root) counts
// as held: nothing is called a decoy on a guess.
func heldBy(procRoot string, pid int, dir string) bool {
	var want unix.Stat_t
	if err := unix.Stat(dir, &want); err != nil {
		return false
	}
	fdDir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	f, err := os.Open(fdDir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	names, _ := f.Readdirnames(heldFDMax)
	for _, n := range names {
		var st unix.Stat_t
		if unix.Stat(filepath.Join(fdDir, n), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			return true
		}
	}
	return false
}

// runNamed reports whether a cgroup's base name is built like a job
// cgroup of a run with this prefix ("<prefix>-<job>-<PID>-<START>-<n>",
// ".scope" under the systemd driver), and whose run it names.
func runNamed(base, prefix string) (owner.ID, bool) {
	if !strings.HasPrefix(base, prefix+"-") {
		return owner.ID{}, false
	}
	_, id, ok := owner.ParseSuffix(strings.TrimSuffix(base, ".scope"))
	return id, ok
}

// nameMax bounds a cgroup or process name in messages.
const nameMax = 200

// quoteName makes a name a job chose safe for a terminal: control, bidi
// and non-printable characters are escaped (Go quoting) and it is cut to
// nameMax bytes.
func quoteName(s string) string {
	cut := ""
	if len(s) > nameMax {
		s, cut = s[:nameMax], "..."
	}
	q := strconv.QuoteToGraphic(s)
	q = q[1 : len(q)-1]
	if q == s && !strings.ContainsAny(s, " \\") {
		return s + cut
	}
	return strconv.QuoteToGraphic(s) + cut
}

// commOf is process pid's name, escaped for a terminal ("?" when gone).
func commOf(procRoot string, pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return quoteName(strings.TrimSuffix(string(b), "\n"))
}
