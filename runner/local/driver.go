package local

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// Cgroup drivers, as container runtimes name them: who creates a job's
// cgroup on a cgroup v2 host.
const (
	// DriverAuto is systemd on a v2 host booted with systemd (PID 1 is
	// systemd and answers on D-Bus), else cgroupfs.
	DriverAuto = "auto"
	// DriverSystemd makes each job's cgroup inside a transient scope unit
	// with Delegate=yes under SystemdSlice, through systemd's D-Bus API.
	DriverSystemd = "systemd"
	// DriverCgroupfs makes the cgroups by hand under a parent that can
	// hold them (see v2ParentFor).
	DriverCgroupfs = "cgroupfs"
)

// Drivers lists the values Options.Driver takes.
func Drivers() []string { return []string{DriverAuto, DriverSystemd, DriverCgroupfs} }

// SystemdSlice is the slice the systemd driver puts its scopes in.
const SystemdSlice = "synergy.slice"

// v2ParentDir is the directory the cgroupfs driver makes (and removes
// when empty) under the ancestor it chose, to hold the job cgroups.
const v2ParentDir = "synergy"

// v2Needed are the controllers a job cgroup needs on v2 that the host has
// (the root's cgroup.controllers): a controller the whole hierarchy lacks
// (a hybrid host's cgroup2 mount, a kernel without it) is asked of no
// cgroup, and a limit that needs it fails at its point with its own
// message.
func v2Needed(rootControllers []string) []string {
	var need []string
	for _, c := range []string{"cpu", "cpuset", "memory", "io"} {
		if slices.Contains(rootControllers, c) {
			need = append(need, c)
		}
	}
	return need
}

// systemdBooted reports whether this host runs systemd as its init, the
// way sd_booted(3) does: /run/systemd/system exists.
func systemdBooted() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// chooseDriver resolves Options.Driver on a host in mode.
func chooseDriver(want, mode string, booted bool) (string, error) {
	switch want {
	case "", DriverAuto:
		if mode == cgroupfs.ModeV2 && booted {
			return DriverSystemd, nil
		}
		return DriverCgroupfs, nil
	case DriverCgroupfs:
		return DriverCgroupfs, nil
	case DriverSystemd:
		if mode != cgroupfs.ModeV2 {
			return "", fmt.Errorf("the %s cgroup driver needs cgroup v2 (unified), and this host's cgroups are %s: use the %s driver",
				DriverSystemd, mode, DriverCgroupfs)
		}
		if !booted {
			return "", fmt.Errorf("the %s cgroup driver needs systemd as PID 1 (/run/systemd/system is missing): use the %s driver",
				DriverSystemd, DriverCgroupfs)
		}
		return DriverSystemd, nil
	}
	return "", fmt.Errorf("cgroup driver %q is not one of %s", want, strings.Join(Drivers(), ", "))
}

// v2Parent is where the cgroupfs driver puts job cgroups on v2.
type v2Parent struct {
	// Rel is the job cgroups' parent, relative to the hierarchy root.
	Rel string
	// Made says Rel is the runner's own v2ParentDir, removed when empty.
	Made bool
}

// v2ParentFor chooses the parent of job cgroups for the cgroupfs driver on
// v2. Given a parent (--cgroup-parent), it is used: made when missing, and
// the controllers enabled down to it. Otherwise the nearest ancestor of
// the caller's own cgroup own that offers every needed controller and can
// pass them to children (the root at worst) gets a v2ParentDir child with
// the controllers enabled. The caller's own cgroup is never a candidate
// (unless it is the root): it holds processes, this one included, and v2
// lets a non-root cgroup with processes give no controller to children.
// No process is moved. The error names each place tried and why it failed.
func v2ParentFor(root, own, given string) (v2Parent, error) {
	need := v2Needed(controllersOf(root))
	if given != "" {
		rel := path.Clean(given)
		if err := enableDown(root, rel, need); err != nil {
			return v2Parent{}, err
		}
		return v2Parent{Rel: rel}, nil
	}
	own = path.Clean("/" + own)
	if _, err := os.Stat(filepath.Join(root, own)); err != nil {
		own = "/" // not visible here (a container without a cgroup namespace)
	}
	var tried []string
	for cand := own; ; cand = path.Dir(cand) {
		if cand != own || cand == "/" {
			rel := path.Join(cand, v2ParentDir)
			err := enableDown(root, rel, need)
			if err == nil {
				return v2Parent{Rel: rel, Made: true}, nil
			}
			tried = append(tried, err.Error())
		}
		if cand == "/" {
			break
		}
	}
	return v2Parent{}, fmt.Errorf("cgroup v2: no cgroup can hold the jobs' cgroups with the %s controllers; tried, nearest first:\n  %s\n"+
		"give a cgroup that delegates them with --cgroup-parent, or use the %s driver on a host booted with systemd",
		strings.Join(need, ", "), strings.Join(tried, "\n  "), DriverSystemd)
}

// enableDown makes rel (relative to root) where missing and enables need in
// the subtree_control of every level from its nearest existing ancestor
// down to rel itself, so that rel's children get those controllers. Levels
// above that ancestor are left alone: the ancestor must already offer every
// controller (its cgroup.controllers).
func enableDown(root, rel string, need []string) error {
	var levels []string // rel and its ancestors that do not exist yet, deepest first
	top := rel
	for {
		if _, err := os.Stat(filepath.Join(root, top)); err == nil {
			break
		}
		levels = append(levels, top)
		if top == "/" {
			break
		}
		top = path.Dir(top)
	}
	dir := filepath.Join(root, top)
	if missing := missingFrom(controllersOf(dir), need); len(missing) > 0 {
		return fmt.Errorf("%s: the %s controller is not available (cgroup.controllers: %q)",
			dir, strings.Join(missing, ", "), strings.Join(controllersOf(dir), " "))
	}
	if err := enableControllers(dir, need); err != nil {
		return err
	}
	for i := len(levels) - 1; i >= 0; i-- {
		d := filepath.Join(root, levels[i])
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s: create: %w", d, err)
		}
		if err := enableControllers(d, need); err != nil {
			return err
		}
	}
	return nil
}

// enableControllers writes "+c" to dir's cgroup.subtree_control for each
// controller in need that it does not enable yet.
func enableControllers(dir string, need []string) error {
	missing := missingFrom(strings.Fields(readString(filepath.Join(dir, "cgroup.subtree_control"))), need)
	if len(missing) == 0 {
		return nil
	}
	var b strings.Builder
	for i, c := range missing {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + c)
	}
	f := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(f, []byte(b.String()), 0); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s: holds processes, so it cannot give the %s controllers to children",
				dir, strings.Join(missing, ", "))
		}
		return fmt.Errorf("%s: enable %s: %w", dir, b.String(), err)
	}
	return nil
}

func controllersOf(dir string) []string {
	return strings.Fields(readString(filepath.Join(dir, "cgroup.controllers")))
}

func missingFrom(have, need []string) []string {
	var missing []string
	for _, c := range need {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	return missing
}
