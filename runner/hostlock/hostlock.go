// Package hostlock keeps concurrent synergy runs on one host from spoiling
// each other, with flock(2) locks that the kernel drops when their holder
// dies (kill -9 included), so nothing stale is ever left to clear:
//
//   - an output lock, "<out>.lock": one profile file is written by one run;
//     a second run is refused with the first one's PID;
//   - a core registry, one lock file per CPU under Dir()/cores: a run claims
//     the cores its largest point needs for its whole life and pins every
//     point to them, so two runs never share a core; a run that finds too
//     few free cores waits, naming the runs that hold them;
//   - a dataset lock under Dir()/datasets, one per dataset directory: a
//     point with a warm cache holds it shared, a cold point (whose eviction
//     would empty the cache under another run's warm point) exclusive, so
//     runs on the same dataset serialize their memory points and say so.
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
var ErrGaveUp = errors.New("gave up waiting for another synergy run")

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

// lockFile is an open file with a flock on it.
type lockFile struct {
	f    *os.File
	path string
}

// tryLock opens (creating) path and takes a flock of kind (LOCK_SH or
// LOCK_EX) without blocking. ok is false when another holder conflicts.
// The file is checked to still be the one at path after locking, so that a
// holder removing it on release (Out does) cannot leave two runs each
// holding a different file.
func tryLock(path string, kind int) (*lockFile, bool, error) {
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, false, err
		}
		if err := unix.Flock(int(f.Fd()), kind|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		var a, b unix.Stat_t
		if unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(path, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			return &lockFile{f: f, path: path}, true, nil
		}
		f.Close() // removed or replaced while we locked it: try again
	}
	return nil, false, fmt.Errorf("lock %s: the file keeps being replaced", path)
}

func (l *lockFile) writePID() {
	_ = l.f.Truncate(0)
	_, _ = l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
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

// pidList is "PID 12, 34" for messages.
func pidList(pids []int) string {
	if len(pids) == 0 {
		return "another synergy run"
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return "the synergy run with PID " + s[0]
	}
	return "the synergy runs with PIDs " + strings.Join(s, ", ")
}
