package hostlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Dataset serializes page-cache use of one dataset directory across runs:
// shared while a point relies on it being cached, exclusive while a point
// evicts it and runs cold. Datasets that overlap (one directory inside the
// other, after symlinks are resolved) take turns as one: a cold point on
// data/class_000 waits for a warm point on data, and the other way round.
//
// Each dataset in use has a lock file under dir/datasets named by a hash of
// its resolved path and holding that path, so that a run finds the
// datasets overlapping its own: it registers its own file first, then
// locks its own and every overlapping one it finds, in the order of their
// names. Of two runs on overlapping datasets the later to look finds the
// other's file, and both then lock that one. A lock file no run holds is
// removed when its run releases it, so they do not pile up.
type Dataset struct {
	ctx  context.Context
	ddir string
	path string // this dataset's lock file
	data string
	note func(string)
	// maxWait bounds each wait when > 0.
	maxWait time.Duration

	mu   sync.Mutex
	ls   []*lockFile
	kind int // unix.LOCK_SH or unix.LOCK_EX while ls are held
}

// OpenDataset prepares the lock of dataset directory data under
// dir/datasets (keyed by its resolved path). ctx bounds every wait, and so
// does maxWait when > 0 (the error then wraps ErrGaveUp and names the
// holders); note hears once per wait which run it waits for.
func OpenDataset(ctx context.Context, dir, data string, maxWait time.Duration, note func(string)) (*Dataset, error) {
	real, err := filepath.EvalSymlinks(data)
	if err != nil {
		return nil, fmt.Errorf("dataset lock: %w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, fmt.Errorf("dataset lock: %w", err)
	}
	ddir := filepath.Join(dir, "datasets")
	if err := os.MkdirAll(ddir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset lock: %w", err)
	}
	if err := errors.Join(ownDir(dir), ownDir(ddir)); err != nil {
		return nil, fmt.Errorf("dataset lock: %w", err)
	}
	return &Dataset{ctx: ctx, ddir: ddir, path: datasetLockPath(ddir, real), data: real, note: note, maxWait: maxWait}, nil
}

func datasetLockPath(ddir, real string) string {
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(ddir, hex.EncodeToString(sum[:8])+".lock")
}

// Shared holds the lock shared (a warm point), waiting for an exclusive
// holder to finish.
func (d *Dataset) Shared() error { return d.hold(unix.LOCK_SH) }

// Exclusive holds the lock alone (a cold point), waiting for every other
// run's warm or cold point on the dataset to finish.
func (d *Dataset) Exclusive() error { return d.hold(unix.LOCK_EX) }

func (d *Dataset) hold(kind int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ls != nil && d.kind == kind {
		return nil
	}
	d.release() // changing kind: drop, then take anew
	if err := d.register(); err != nil {
		return fmt.Errorf("dataset lock: %w", err)
	}
	files, err := d.overlapping()
	if err != nil {
		return fmt.Errorf("dataset lock: %w", err)
	}
	// A turnstile keeps a run that waits from starving: whoever waits for
	// the dataset lock holds the turnstile meanwhile, so a run that has
	// just released the lock cannot take it again before the waiter.
	var turns []*lockFile
	defer func() {
		for _, t := range turns {
			t.unlock()
			removeIfFree(t.path)
		}
	}()
	for _, f := range files {
		t, err := d.wait([]lockTarget{{path: f.path + ".turn", data: f.data}}, unix.LOCK_EX, "", openLock)
		if err != nil {
			return err
		}
		turns = append(turns, t...)
	}
	what := "measuring a cold point (it evicts the dataset from the page cache)"
	if kind == unix.LOCK_EX {
		what = "measuring a point that relies on the dataset being cached"
	}
	ls, err := d.wait(files, kind, what, d.openRegistered)
	if err != nil {
		removeIfFree(d.path)
		return err
	}
	d.ls, d.kind = ls, kind
	return nil
}

// lockTarget is a dataset's lock file and the dataset it stands for.
type lockTarget struct{ path, data string }

// register makes this dataset's lock file, holding its path, unless it is
// there: written whole to a temporary file, then linked to its name, so
// that another run never reads it half written.
func (d *Dataset) register() error {
	if _, err := os.Lstat(d.path); err == nil {
		return nil
	}
	tmp, err := os.CreateTemp(d.ddir, ".reg-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(d.data + "\n")
	if err = errors.Join(err, tmp.Chmod(0o644), tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), d.path); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// openRegistered opens a dataset's lock file, registering this dataset
// again first when it is its own and was removed since (by a run that
// found it free): a lock file is never made empty, or another run would
// not know which dataset it stands for.
func (d *Dataset) openRegistered(path string) (*os.File, error) {
	f, err := os.OpenFile(path, lockFlags, 0)
	if errors.Is(err, os.ErrNotExist) && path == d.path {
		if err := d.register(); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(path, lockFlags, 0)
	}
	return f, err
}

// overlapping lists the lock files of this dataset and of every dataset
// in use that is inside it or holds it, sorted by file name (the order
// every run locks them in). A file gone meanwhile (its run released it)
// is left out: whoever registers it again finds this run's.
func (d *Dataset) overlapping() ([]lockTarget, error) {
	ents, err := os.ReadDir(d.ddir)
	if err != nil {
		return nil, err
	}
	out := []lockTarget{{path: d.path, data: d.data}}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(d.ddir, name)
		if !strings.HasSuffix(name, ".lock") || p == d.path || !e.Type().IsRegular() {
			continue
		}
		data, ok := registeredPath(p)
		if ok && overlap(data, d.data) {
			out = append(out, lockTarget{path: p, data: data})
		}
	}
	slices.SortFunc(out, func(a, b lockTarget) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// registeredPath reads the dataset path a lock file holds.
func registeredPath(p string) (string, bool) {
	f, err := os.OpenFile(p, lockFlags, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	s, ok := strings.CutSuffix(string(b), "\n")
	return s, err == nil && ok && filepath.IsAbs(s)
}

// overlap reports whether directory a is b, inside b, or holds b.
func overlap(a, b string) bool {
	inside := func(x, y string) bool { return x == y || strings.HasPrefix(x, strings.TrimSuffix(y, "/")+"/") }
	return inside(a, b) || inside(b, a)
}

// wait takes a flock on every target, polling until ctx ends (all or none
// at a time, so two runs never hold part of each other's set); the first
// time it has to wait it tells note what the holders are doing (what,
// unless "").
func (d *Dataset) wait(targets []lockTarget, kind int, what string, open func(string) (*os.File, error)) ([]*lockFile, error) {
	told := false
	start := time.Now()
	for {
		var held []*lockFile
		var busy *lockTarget
		for i, t := range targets {
			l, ok, err := tryLockWith(t.path, kind, open)
			if errors.Is(err, os.ErrNotExist) && t.path != d.path {
				continue // its run released it: if it comes back it finds ours
			}
			if err != nil {
				unlockAll(held)
				return nil, fmt.Errorf("dataset lock: %w", err)
			}
			if !ok {
				busy = &targets[i]
				break
			}
			held = append(held, l)
		}
		if busy == nil {
			return held, nil
		}
		unlockAll(held)
		if d.maxWait > 0 && time.Since(start) >= d.maxWait {
			return nil, fmt.Errorf("%w after %v for the dataset lock of %s: %s holds it%s", ErrGaveUp, d.maxWait, d.data, pidList(Holders(busy.path)), d.via(busy.data))
		}
		if !told && what != "" && d.note != nil {
			if busy.data == d.data {
				d.note(fmt.Sprintf("waiting: %s on the same dataset %s, or on one overlapping it, is %s", pidList(Holders(busy.path)), d.data, what))
			} else {
				d.note(fmt.Sprintf("waiting: %s on the dataset %s, which overlaps %s, is %s", pidList(Holders(busy.path)), busy.data, d.data, what))
			}
			told = true
		}
		select {
		case <-d.ctx.Done():
			return nil, fmt.Errorf("waiting for the dataset lock of %s: %w", d.data, d.ctx.Err())
		case <-time.After(pollInterval / 5):
		}
	}
}

// via names the overlapping dataset a wait was for, if not this one.
func (d *Dataset) via(data string) string {
	if data == d.data || data == "" {
		return ""
	}
	return " (on " + data + ", which overlaps it)"
}

func unlockAll(ls []*lockFile) {
	for _, l := range ls {
		_ = l.unlock()
	}
}

// Release drops the lock, and removes this dataset's lock file if no other
// run holds or waits on it.
func (d *Dataset) Release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.release()
}

func (d *Dataset) release() {
	if d.ls == nil {
		return
	}
	unlockAll(d.ls)
	d.ls = nil
	removeIfFree(d.path)
}
