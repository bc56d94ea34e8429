// Package hostlock keeps concurrent synergy runs on one host from spoiling
// each other, with flock(2) locks that the kernel drops when their holder
// dies (kill -9 included), so nothing stale is ever left to clear:
//
//   - an output lock, "<out>.lock": one profile file is written by one run;
//     a second run is refused with the first one's PID (from /proc/locks:
//     lock files are opened read-only, never through a symlink, and
//     nothing is written to them);
//   - a core registry, one lock file per CPU under Dir()/cores: a run claims
//     the cores its largest point needs for its whole life and pins every
//     point to them, so two runs never share a core; a run that finds too
//     few free cores waits, naming the runs that hold them;
//   - a dataset lock under Dir()/datasets, one per dataset directory: a
//     point with a warm cache holds it shared, a cold point (whose eviction
//     would empty the cache under another run's warm point) exclusive, so
//     runs on the same or overlapping datasets serialize their memory
//     points and say so.
package hostlock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrGaveUp is wrapped by the errors of a wait for another run's cores or
// dataset that outlasted its bound.
var ErrGaveUp = errors.New("gave up waiting for a lock another process holds")

// EnvDir overrides Dir.
const EnvDir = "SYNERGY_RUN_DIR"

// Dir is where the registry's lock files live: $SYNERGY_RUN_DIR, else
// /run/synergy (a tmpfs: empty after a reboot) when it can be made, else
// $TMPDIR/synergy-run-<uid>.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	if err := os.MkdirAll("/run/synergy", 0o755); err == nil && unix.Access("/run/synergy", unix.W_OK) == nil {
		return "/run/synergy"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("synergy-run-%d", os.Getuid()))
}

// ownDir checks that dir, where lock files are made, is a directory of
// this user's that no one else may write: not a symlink, nor a directory
// planted in a shared place (the $TMPDIR fallback of Dir) by another user.
func ownDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory (a symlink is not followed)", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to user %d, not to this user (%d): another user could plant files in it", dir, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s is writable by other users (mode %o): they could plant files in it", dir, st.Mode&0o777)
	}
	return nil
}

// lockFile is an open file with a flock on it.
type lockFile struct {
	f    *os.File
	path string
}

// lockFlags open a lock file read-only (flock needs no more, and nothing
// is ever written to a lock file, so a planted hard link to another file
// gains nothing), never through a symlink, and without waiting on a FIFO.
const lockFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// openLock opens the lock file path, creating it empty when absent.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, lockFlags|os.O_CREATE, 0o644)
}

// tryLock opens (creating) path and takes a flock of kind (LOCK_SH or
// LOCK_EX) without blocking. ok is false when another holder conflicts.
func tryLock(path string, kind int) (*lockFile, bool, error) {
	return tryLockWith(path, kind, openLock)
}

// tryLockWith is tryLock with the file opened by open. The file must be a
// regular file, not a symlink (refused, not followed) nor anything else;
// it is checked to still be the one at path after locking, so that a
// holder removing it on release (Out does) cannot leave two runs each
// holding a different file.
func tryLockWith(path string, kind int, open func(string) (*os.File, error)) (*lockFile, bool, error) {
	for range 10 {
		f, err := open(path)
		if errors.Is(err, unix.ELOOP) {
			return nil, false, fmt.Errorf("lock %s: it is a symlink, which a lock file never is (refused, not followed)", path)
		}
		if err != nil {
			return nil, false, err
		}
		var a unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &a); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		if a.Mode&unix.S_IFMT != unix.S_IFREG {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: it is not a regular file, which a lock file always is", path)
		}
		if err := unix.Flock(int(f.Fd()), kind|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		var b unix.Stat_t
		if unix.Lstat(path, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			return &lockFile{f: f, path: path}, true, nil
		}
		f.Close() // removed or replaced while we locked it: try again
	}
	return nil, false, fmt.Errorf("lock %s: the file keeps being replaced", path)
}

// removeIfFree removes the lock file path when no one holds or waits on
// it: it is removed while held exclusive, and whoever opened it meanwhile
// finds it gone once locked (tryLock) and tries again.
func removeIfFree(path string) {
	l, ok, err := tryLockWith(path, unix.LOCK_EX, func(p string) (*os.File, error) { return os.OpenFile(p, lockFlags, 0) })
	if err != nil || !ok {
		return
	}
	_ = os.Remove(path)
	_ = l.unlock()
}

func (l *lockFile) unlock() error { return l.f.Close() }

// Holders lists the PIDs holding a flock on path, from /proc/locks (the
// process that took each lock), sorted; nil when none or unknown.
func Holders(path string) []int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	want := fmt.Sprintf(":%d", st.Ino)
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"; waiters
		// have "->" after the number.
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" {
			continue
		}
		dev := fs[5]
		if !strings.HasSuffix(dev, want) {
			continue
		}
		maj, min, ok := devOf(strings.TrimSuffix(dev, want))
		if !ok || maj != unix.Major(uint64(st.Dev)) || min != unix.Minor(uint64(st.Dev)) {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// devOf parses "MAJ:MIN" in hex, as /proc/locks writes it.
func devOf(s string) (uint32, uint32, bool) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	maj, err1 := strconv.ParseUint(a, 16, 32)
	min, err2 := strconv.ParseUint(b, 16, 32)
	return uint32(maj), uint32(min), err1 == nil && err2 == nil
}

// pidList names lock holders for messages: a process whose name holds
// "synergy" (synergy, a renamed build, a test binary of synergy's) as "the
// synergy run with PID 12" ("the synergy runs with PIDs 12, 34"), any other
// (a plain flock(1)) only as what it is, "process 56 (flock)", its name
// escaped: it is not called a synergy run.
func pidList(pids []int) string { return holderList("/proc", pids) }

func holderList(procRoot string, pids []int) string {
	if len(pids) == 0 {
		return "another process"
	}
	var runs, others []string
	for _, p := range pids {
		comm, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(p), "comm"))
		name := strings.TrimSuffix(string(comm), "\n")
		switch {
		case err == nil && strings.Contains(name, "synergy"):
			runs = append(runs, strconv.Itoa(p))
		case err != nil:
			others = append(others, fmt.Sprintf("process %d (gone)", p))
		default:
			others = append(others, fmt.Sprintf("process %d (%s)", p, quoteComm(name)))
		}
	}
	var parts []string
	switch len(runs) {
	case 0:
	case 1:
		parts = append(parts, "the synergy run with PID "+runs[0])
	default:
		parts = append(parts, "the synergy runs with PIDs "+strings.Join(runs, ", "))
	}
	parts = append(parts, others...)
	return strings.Join(parts, " and ")
}

// quoteComm escapes a process name's control and non-graphic characters.
func quoteComm(s string) string {
	q := strconv.QuoteToGraphic(s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
}
