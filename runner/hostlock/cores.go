package hostlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/runner"
)

// pollInterval is how often a waiting run tries its locks again.
const pollInterval = 250 * time.Millisecond

// DefaultMaxWait is how long a run waits for cores or a dataset another
// process holds unless told otherwise (--host-wait): a run stuck on a
// holder that never ends fails, naming it, instead of waiting for ever.
const DefaultMaxWait = time.Hour

// tellEvery is how often a waiting run says again who it waits for, at
// most, when the holders change.
const tellEvery = time.Minute

// Cores is a run's claim on some of the host's CPUs.
type Cores struct {
	cpus  []int
	locks []*lockFile
}

// ClaimCores claims n of the CPUs in available for this run, lowest
// numbers first among the free ones, one lock file per CPU under
// dir/cores. While fewer than n are free it waits (until ctx ends, or for
// at most maxWait when maxWait > 0: then the error wraps ErrGaveUp and
// names the holders), telling wait which processes hold which CPUs: at
// once, then again when that changes, at most once per tellEvery.
func ClaimCores(ctx context.Context, dir string, n int, available []int, maxWait time.Duration, wait func(msg string)) (*Cores, error) {
	if n <= 0 || n > len(available) {
		return nil, fmt.Errorf("claim %d cores: %d available (%s)", n, len(available), runner.FormatCPUSet(available))
	}
	cdir := filepath.Join(dir, "cores")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, fmt.Errorf("core registry: %w", err)
	}
	if err := errors.Join(ownDir(dir), ownDir(cdir)); err != nil {
		return nil, fmt.Errorf("core registry: %w", err)
	}
	told := ""
	var toldAt time.Time
	start := time.Now()
	for {
		c, held, err := tryClaim(cdir, n, available)
		if err != nil || c != nil {
			return c, err
		}
		msg := busyMessage(n, available, held)
		if maxWait > 0 && time.Since(start) >= maxWait {
			return nil, fmt.Errorf("%w after %v: %s", ErrGaveUp, maxWait, strings.TrimPrefix(msg, "waiting "))
		}
		// A holder seen only as "another run" (its lock not yet in
		// /proc/locks, or just gone) does not replace a message naming one.
		if wait != nil && msg != told && (told == "" || namesHolder(held) && time.Since(toldAt) >= tellEvery) {
			wait(msg)
			told, toldAt = msg, time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d free cores: %w", n, ctx.Err())
		case <-time.After(pollInterval + time.Duration(rand.Int64N(int64(pollInterval)))): // jitter: two runs racing for the same cores do not retry in step
		}
	}
}

// tryClaim locks the first n free CPUs, or none (held maps the busy CPUs
// to their holders' PIDs).
func tryClaim(cdir string, n int, available []int) (*Cores, map[int][]int, error) {
	c := &Cores{}
	held := map[int][]int{}
	for _, cpu := range available {
		if len(c.cpus) == n {
			break
		}
		p := filepath.Join(cdir, fmt.Sprintf("cpu%d.lock", cpu))
		l, ok, err := tryLock(p, unix.LOCK_EX)
		if err != nil {
			c.Release()
			return nil, nil, fmt.Errorf("core registry: %w", err)
		}
		if !ok {
			held[cpu] = Holders(p)
			continue
		}
		c.cpus, c.locks = append(c.cpus, cpu), append(c.locks, l)
	}
	if len(c.cpus) < n {
		c.Release()
		return nil, held, nil
	}
	return c, nil, nil
}

// namesHolder reports whether any busy CPU's holder is known by PID.
func namesHolder(held map[int][]int) bool {
	for _, pids := range held {
		if len(pids) > 0 {
			return true
		}
	}
	return false
}

func busyMessage(n int, available []int, held map[int][]int) string {
	byRun := map[string][]int{}
	for cpu, pids := range held {
		who := pidList(pids)
		byRun[who] = append(byRun[who], cpu)
	}
	var parts []string
	for _, who := range slices.Sorted(maps.Keys(byRun)) {
		// sorted: map order would print one set as "0-1", then "1,0"
		parts = append(parts, fmt.Sprintf("%s holds CPU %s", who, runner.FormatCPUSet(slices.Sorted(slices.Values(byRun[who])))))
	}
	return fmt.Sprintf("waiting for %d of CPUs %s to be free: %s", n, runner.FormatCPUSet(available), strings.Join(parts, "; "))
}

// CPUs are the claimed CPUs, ascending.
func (c *Cores) CPUs() []int { return slices.Clone(c.cpus) }

// Release gives the cores back.
func (c *Cores) Release() {
	if c == nil {
		return
	}
	for _, l := range c.locks {
		_ = l.unlock()
	}
	c.cpus, c.locks = nil, nil
}
