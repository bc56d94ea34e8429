package hostlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Dataset serializes page-cache use of one dataset directory across runs:
// shared while a point relies on it being cached, exclusive while a point
// evicts it and runs cold.
type Dataset struct {
	ctx  context.Context
	path string // lock file
	data string
	note func(string)
	// maxWait bounds each wait when > 0.
	maxWait time.Duration

	mu   sync.Mutex
	l    *lockFile
	kind int // unix.LOCK_SH or unix.LOCK_EX while l is held
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
	sum := sha256.Sum256([]byte(real))
	return &Dataset{ctx: ctx, path: filepath.Join(ddir, hex.EncodeToString(sum[:8])+".lock"), data: real, note: note, maxWait: maxWait}, nil
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
	if d.l != nil && d.kind == kind {
		return nil
	}
	if d.l != nil { // changing kind: drop, then take anew
		_ = d.l.unlock()
		d.l = nil
	}
	// A turnstile keeps a run that waits from starving: whoever waits for
	// the dataset lock holds the turnstile meanwhile, so a run that has
	// just released the lock cannot take it again before the waiter.
	turn, err := d.wait(d.path+".turn", unix.LOCK_EX, "")
	if err != nil {
		return err
	}
	defer turn.unlock()
	what := "measuring a cold point (it evicts the dataset from the page cache)"
	if kind == unix.LOCK_EX {
		what = "measuring a point that relies on the dataset being cached"
	}
	l, err := d.wait(d.path, kind, what)
	if err != nil {
		return err
	}
	d.l, d.kind = l, kind
	return nil
}

// wait takes a flock on path, polling until ctx ends; the first time it
// has to wait it tells note what the holders are doing (what, unless "").
func (d *Dataset) wait(path string, kind int, what string) (*lockFile, error) {
	told := false
	start := time.Now()
	for {
		l, ok, err := tryLock(path, kind)
		if err != nil {
			return nil, fmt.Errorf("dataset lock: %w", err)
		}
		if ok {
			return l, nil
		}
		if d.maxWait > 0 && time.Since(start) >= d.maxWait {
			return nil, fmt.Errorf("%w after %v for the dataset lock of %s: %s holds it", ErrGaveUp, d.maxWait, d.data, pidList(Holders(path)))
		}
		if !told && what != "" && d.note != nil {
			d.note(fmt.Sprintf("waiting: %s on the same dataset %s is %s", pidList(Holders(path)), d.data, what))
			told = true
		}
		select {
		case <-d.ctx.Done():
			return nil, fmt.Errorf("waiting for the dataset lock of %s: %w", d.data, d.ctx.Err())
		case <-time.After(pollInterval / 5):
		}
	}
}

// Release drops the lock.
func (d *Dataset) Release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.l != nil {
		_ = d.l.unlock()
		d.l = nil
	}
}
