package local

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner/cgroupfs"
	"github.com/synergy-sched/synergy/runner/owner"
)

// reapMaxDepth bounds how deep below a hierarchy's root ReapOrphans looks
// for job cgroups (runners nest them under their caller's own cgroup, e.g.
// /user.slice/user-0.slice/session-3.scope).
const reapMaxDepth = 8

// ReapOrphans finds the job cgroups of runners that are no longer alive
// (named "<Prefix>-<job>-<PID>-<START>-<n>", see owner), kills every process
// still in them and removes them, in every hierarchy this runner uses. It
// returns the directories removed. Cgroups of live runners, this one's
// included, are left alone. A cgroup named after a live process that does
// not hold it (heldBy: every runner holds the job cgroups it made) and
// that holds a process that does not descend from that process (see decoy)
// is a decoy a job made to hide in, and is reaped too; its entry says so.
func (r *Runner) ReapOrphans() ([]string, error) {
	var removed []string
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(r.ctl)) {
		dirs, decoys, err := r.orphanDirs(r.ctl[c].Root)
		if err != nil {
			errs = append(errs, err)
		}
		for _, d := range dirs {
			if err := killUntilEmpty(func() ([]int, error) { return readProcs(d) }); err != nil {
				errs = append(errs, fmt.Errorf("kill the processes of orphaned cgroup %s: %w", d, err))
				continue
			}
			if unit := filepath.Base(d); strings.HasSuffix(unit, ".scope") && systemdBooted() {
				// systemd stops an empty scope by itself; stopping it
				// here also forgets a failed one.
				if err := r.sd.stopUnit(unit); err != nil {
					errs = append(errs, err)
				}
			}
			if err := rmdirWhenEmpty(d); err != nil {
				errs = append(errs, err)
				continue
			}
			name := d // a decoy's name is a job's to choose: quoted when unfit to print
			if q := strconv.QuoteToGraphic(d); q[1:len(q)-1] != d {
				name = q
			}
			if why, ok := decoys[d]; ok {
				name += " (" + why + ")"
			}
			removed = append(removed, name)
		}
		if c == cgroupfs.KeyUnified {
			errs = append(errs, removeEmptyParents(dirs))
			if systemdBooted() { // systemd may have removed the scopes itself
				errs = append(errs, r.stopEmptySlice())
			}
		}
	}
	return removed, errors.Join(errs...)
}

// removeEmptyParents removes the cgroupfs driver's parent directories (v2)
// that held reaped cgroups, where nothing else is left in them (a live
// run's are in use and stay).
func removeEmptyParents(reaped []string) error {
	seen := map[string]bool{}
	var errs []error
	for _, d := range reaped {
		p := filepath.Dir(d)
		if seen[p] {
			continue
		}
		seen[p] = true
		if filepath.Base(p) != v2ParentDir {
			continue
		}
		if err := unix.Rmdir(p); err != nil && !errors.Is(err, unix.ENOENT) &&
			!errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOTEMPTY) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// orphanDirs lists the job cgroups below root whose owner is dead, and the
// decoys (see ReapOrphans; decoys maps each to why), deepest first (a
// job's own sub-cgroups go before it).
func (r *Runner) orphanDirs(root string) (found []string, decoys map[string]string, _ error) {
	decoys = map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return fmt.Errorf("look for orphaned cgroups in %s: %w", root, err)
			}
			return nil // a cgroup removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && strings.Count(strings.TrimPrefix(p, root), "/") > reapMaxDepth {
			return fs.SkipDir
		}
		if !strings.HasPrefix(d.Name(), r.opts.Prefix+"-") {
			return nil
		}
		id, ok := runNamed(d.Name(), r.opts.Prefix)
		if !ok {
			return nil
		}
		if owner.Alive(r.opts.ProcRoot, id) {
			why := r.decoy(p, id)
			if why == "" {
				return fs.SkipDir
			}
			decoys[p] = why
		}
		sub, err := subtreeDirs(p)
		if err != nil {
			return nil // a cgroup removed while walking, or a job's thousands: left for next time
		}
		found = append(found, sub...)
		return fs.SkipDir
	})
	slices.SortStableFunc(found, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return found, decoys, err
}

// decoy says why a cgroup named after live process id is not that
// process's job cgroup, or "" when it may be: id holds it, or everything in
// it descends from id (a runner is its jobs' subreaper, so whatever a live
// run's job started descends from it: a run of a synergy that does not
// hold its cgroups yet, the systemd driver's pin in the instant before its
// runner holds the scope). PID 1 starts no job. A job's process in a decoy
// named after one of its own runner's ancestors passes while that runner
// lives, whose escape killer removes it; once the runner is gone it no
// longer descends from that ancestor.
func (r *Runner) decoy(dir string, id owner.ID) string {
	pids, err := subtreeProcs(dir)
	if err == nil && slices.Contains(pids, id.PID) {
		// A runner never sits in its own job cgroups: a process hiding in
		// one named after itself (and holding it) is a job's.
		return fmt.Sprintf("named after live process %d, which is inside it: a runner never is, a job's decoy", id.PID)
	}
	if heldBy(r.opts.ProcRoot, id.PID, dir) {
		return ""
	}
	if err != nil {
		return ""
	}
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(r.opts.ProcRoot, strconv.Itoa(pid), "stat"))
		if err != nil {
			continue // gone
		}
		p, ok := parseStat(string(b))
		if !ok {
			continue
		}
		if id.PID == 1 || !r.descendsFrom(pid, id.PID) {
			return fmt.Sprintf("named after live process %d, which does not hold it, and held process %d (%s), which it did not start: a job's decoy",
				id.PID, pid, quoteName(p.comm))
		}
	}
	return ""
}

// ancestryMax bounds the walk up a process's parents.
const ancestryMax = 4096

// descendsFrom reports whether pid's parents lead to anc. A parent that
// cannot be read counts as leading there: nothing is called a decoy on a
// guess.
func (r *Runner) descendsFrom(pid, anc int) bool {
	for range ancestryMax {
		if pid == anc {
			return true
		}
		if pid <= 1 {
			return false
		}
		b, err := os.ReadFile(filepath.Join(r.opts.ProcRoot, strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		p, ok := parseStat(string(b))
		if !ok {
			return true
		}
		pid = p.ppid
	}
	return true
}
