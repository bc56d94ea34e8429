package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// group is one job's cgroup, in one or several hierarchies.
type group interface {
	paths() map[string]string
	// addProc moves a process (all its threads) into the group.
	addProc(pid int) error
	// procs lists the processes in the group (all hierarchies).
	procs() ([]int, error)
	// kill SIGKILLs everything in the group and waits until it is empty.
	kill() error
	stats() (runner.Stats, error)
	// nested names the processes in cgroups the job made below its own
	// (see tree.go), for a warning.
	nested(procRoot string) []string
	// remove deletes the group's directories and every cgroup below them;
	// they must be empty. It then releases the group (registry, held
	// descriptors).
	remove() error
}

// Bounds of the kill and remove loops.
const (
	emptyPollInterval = 10 * time.Millisecond
	emptyPollTries    = 300 // 3 s
)

// v1Group is a job's directories in the v1 hierarchies.
type v1Group struct {
	dirs map[string]string // controller -> directory
	cg   cgroup1.Cgroup
	// fds hold the directories open (tree.go); unregister takes them out
	// of liveJobs.
	fds        []int
	unregister func()
}

// newV1Group makes the job's cgroup in every mounted v1 controller, with the
// plan's limits written through containerd's cgroup1 package.
func (r *Runner) newV1Group(jobName string, p plan) (group, error) {
	anchor := "memory"
	if _, ok := r.ctl[anchor]; !ok {
		anchor = slices.Sorted(maps.Keys(r.ctl))[0]
	}
	name, err := r.reserveName(jobName, r.ctl[anchor])
	if err != nil {
		return nil, err
	}
	g := &v1Group{dirs: map[string]string{}}
	var subs []cgroup1.Subsystem
	for c, h := range r.ctl {
		g.dirs[c] = h.dir(name)
		subs = append(subs, v1Subsystem(c, filepath.Dir(h.Root)))
	}
	rel := func(n cgroup1.Name) (string, error) {
		h, ok := r.ctl[string(n)]
		if !ok {
			return "", cgroup1.ErrControllerNotActive
		}
		return path.Join(h.Parent, name), nil
	}
	cg, err := cgroup1.New(rel, v1Resources(p), cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subs, nil }))
	if err != nil {
		err = fmt.Errorf("create cgroup %s with limits: %w", name, err)
		return nil, errors.Join(err, g.remove())
	}
	g.cg = cg
	rels := map[string]string{}
	var dirs []string
	for c, h := range r.ctl {
		rels[c] = path.Join(h.Parent, name)
		dirs = append(dirs, g.dirs[c])
	}
	if g.fds, err = holdDirs(dirs...); err != nil {
		return nil, errors.Join(err, g.remove())
	}
	g.unregister = registerJob(rels)
	return g, nil
}

// v1Subsystem is containerd's controller for one of v1Controllers, rooted
// at mountRoot (the directory holding the per-controller mounts).
func v1Subsystem(name, mountRoot string) cgroup1.Subsystem {
	switch name {
	case "cpuset":
		return cgroup1.NewCpuset(mountRoot)
	case "cpu":
		return cgroup1.NewCpu(mountRoot)
	case "cpuacct":
		return cgroup1.NewCpuacct(mountRoot)
	case "memory":
		return cgroup1.NewMemory(mountRoot)
	case "blkio":
		return cgroup1.NewBlkio(mountRoot)
	}
	panic("local: no v1 subsystem " + name)
}

func (g *v1Group) paths() map[string]string { return maps.Clone(g.dirs) }

func (g *v1Group) addProc(pid int) error { return g.cg.AddProc(uint64(pid)) }

func (g *v1Group) procs() ([]int, error) {
	var all []int
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(g.dirs)) {
		pids, err := subtreeProcs(g.dirs[c])
		errs = append(errs, err)
		all = append(all, pids...) // what was found, even beside an error
	}
	slices.Sort(all)
	return slices.Compact(all), errors.Join(errs...)
}

func (g *v1Group) kill() error { return killUntilEmpty(g.procs) }

func (g *v1Group) stats() (runner.Stats, error) { return cgroupfs.ReadStats(g.dirs, time.Now()) }

func (g *v1Group) nested(procRoot string) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(g.dirs)) {
		out = append(out, nestedProcs(procRoot, g.dirs[c])...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (g *v1Group) remove() error {
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(g.dirs)) {
		if err := removeSubtree(g.dirs[c]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	releaseDirs(g.fds)
	g.fds = nil
	if g.unregister != nil {
		g.unregister()
	}
	return nil
}

// v2Group is a job's directory in the unified hierarchy, inside its scope
// unit under the systemd driver.
type v2Group struct {
	dir   string
	scope *scope // nil under the cgroupfs driver
	// fds hold the run-named directory open (tree.go); unregister takes
	// it out of liveJobs.
	fds        []int
	unregister func()
}

// top is the directory named after the run: the job's cgroup, or under the
// systemd driver its scope (which also holds the pin).
func (g *v2Group) top() string {
	if g.scope != nil {
		return g.scope.dir
	}
	return g.dir
}

// hold registers the group in liveJobs and holds its top directory.
func (g *v2Group) hold(root string) error {
	rel, err := filepath.Rel(root, g.top())
	if err != nil {
		return err
	}
	if g.fds, err = holdDirs(g.top()); err != nil {
		return err
	}
	g.unregister = registerJob(map[string]string{cgroupfs.KeyUnified: "/" + rel})
	return nil
}

// newV2Group makes the job's cgroup in the unified hierarchy with the
// plan's limits, plus accounting for the controllers the parent already
// delegates: under the systemd driver inside a scope of its own, under the
// cgroupfs driver below the parent the runner prepared.
func (r *Runner) newV2Group(jobName string, p plan) (group, error) {
	if r.driver == DriverSystemd {
		return r.newScopeGroup(jobName, p)
	}
	h := r.ctl[cgroupfs.KeyUnified]
	res := v2Resources(p)
	parent := h.dir("")
	if r.v2Parent.Rel != "" { // made again if another run removed it meanwhile
		if err := enableDown(h.Root, h.Parent, v2Needed(controllersOf(h.Root))); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
	}
	if missing := missingFrom(controllersOf(parent), res.EnabledControllers()); len(missing) > 0 {
		return nil, fmt.Errorf("cgroup v2: the %s controller is not available in %s (cgroup.controllers: %q)",
			strings.Join(missing, ", "), parent, strings.Join(controllersOf(parent), " "))
	}
	fillAccounting(res, parent)
	name, err := r.reserveName(jobName, h)
	if err != nil {
		return nil, err
	}
	g := &v2Group{dir: h.dir(name)}
	if _, err := cgroup2.NewManager(h.Root, path.Join(h.Parent, name), res); err != nil {
		err = fmt.Errorf("create cgroup %s with limits: %w", g.dir, err)
		if errors.Is(err, unix.EBUSY) {
			err = fmt.Errorf("%w (the parent holds processes, so it cannot enable controllers for children: "+
				"give --cgroup-parent a cgroup that delegates them)", err)
		}
		return nil, errors.Join(err, g.remove())
	}
	if err := g.hold(h.Root); err != nil {
		return nil, errors.Join(err, g.remove())
	}
	return g, nil
}

func (g *v2Group) paths() map[string]string { return map[string]string{cgroupfs.KeyUnified: g.dir} }

func (g *v2Group) addProc(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// procs lists the processes in the job's subtree, under the systemd
// driver the whole scope's but for the pin.
func (g *v2Group) procs() ([]int, error) {
	pids, err := subtreeProcs(g.top())
	if g.scope != nil && g.scope.pin != nil {
		pids = slices.DeleteFunc(pids, func(p int) bool { return p == g.scope.pin.Process.Pid })
	}
	return pids, err
}

// nested names the processes below the job's cgroup, and under the
// systemd driver those in cgroups of the scope other than "job" and "pin".
func (g *v2Group) nested(procRoot string) []string {
	if g.scope == nil {
		return nestedProcs(procRoot, g.dir)
	}
	return nestedProcs(procRoot, g.scope.dir, g.dir, filepath.Join(g.scope.dir, scopePinDir))
}

// kill uses cgroup.kill (Linux 5.14+) where there is one.
func (g *v2Group) kill() error {
	err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", filepath.Join(g.dir, "cgroup.kill"), err)
	}
	return killUntilEmpty(g.procs)
}

func (g *v2Group) stats() (runner.Stats, error) { return cgroupfs.ReadStats(g.paths(), time.Now()) }

func (g *v2Group) remove() error {
	err := removeSubtree(g.dir)
	if g.scope != nil { // stopping the scope also kills what the job left
		err = errors.Join(err, g.scope.remove())
	}
	if err != nil {
		return err
	}
	releaseDirs(g.fds)
	g.fds = nil
	if g.unregister != nil {
		g.unregister()
	}
	return nil
}

// readProcs lists the pids in dir/cgroup.procs; a removed group is empty.
func readProcs(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV) {
		return nil, nil // removed, or being removed
	}
	if err != nil {
		return nil, fmt.Errorf("list processes of cgroup %s: %w", dir, err)
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if t := strings.TrimSpace(s.Text()); t != "" {
			pid, err := strconv.Atoi(t)
			if err != nil {
				return nil, fmt.Errorf("list processes of cgroup %s: %q is not a pid", dir, t)
			}
			pids = append(pids, pid)
		}
	}
	if err := s.Err(); errors.Is(err, unix.ENODEV) {
		return nil, nil // removed while being read
	} else if err != nil {
		return nil, fmt.Errorf("list processes of cgroup %s: %w", dir, err)
	}
	return pids, nil
}

// killUntilEmpty SIGKILLs every listed process until none is left (a
// process may fork while being killed).
func killUntilEmpty(list func() ([]int, error)) error {
	var pids []int
	var err error
	for range emptyPollTries {
		// A list that failed in part (a job that made more cgroups than
		// are looked at) still names processes to kill: they are killed.
		if pids, err = list(); len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(emptyPollInterval)
	}
	return errors.Join(fmt.Errorf("processes %v survived SIGKILL for %v", pids, emptyPollInterval*emptyPollTries), err)
}

// rmdirWhenEmpty removes a cgroup directory, retrying while the kernel
// still reports it busy (exiting tasks); a missing directory is removed.
func rmdirWhenEmpty(dir string) error {
	var err error
	for range emptyPollTries {
		err = unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
			return nil // removed (by systemd, for a scope's cgroups) or being removed
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(emptyPollInterval)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

func readString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
