package local

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
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
// included, are left alone.
func (r *Runner) ReapOrphans() ([]string, error) {
	var removed []string
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(r.ctl)) {
		dirs, err := r.orphanDirs(r.ctl[c].Root)
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
			removed = append(removed, d)
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

// orphanDirs lists the job cgroups below root whose owner is dead, deepest
// first (a job's own sub-cgroups go before it).
func (r *Runner) orphanDirs(root string) ([]string, error) {
	var found []string
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
		_, id, ok := owner.ParseSuffix(strings.TrimSuffix(d.Name(), ".scope"))
		if !ok {
			return nil
		}
		if !owner.Alive(r.opts.ProcRoot, id) {
			_ = filepath.WalkDir(p, func(q string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					found = append(found, q)
				}
				return nil
			})
		}
		return fs.SkipDir
	})
	slices.SortStableFunc(found, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return found, err
}
