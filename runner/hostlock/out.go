package hostlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrOutBusy is the error of Out when another run writes the profile.
var ErrOutBusy = errors.New("another synergy run is writing this profile")

// OutLock is a held "<out>.lock".
type OutLock struct{ l *lockFile }

// Out takes the lock of profile path out ("<out>.lock", next to it) or
// fails at once with ErrOutBusy naming the run that holds it (read from
// /proc/locks: nothing is written to the lock file). The lock file is
// opened read-only and never through a symlink (see tryLock), so one
// planted there by whoever can write out's directory is refused, and a
// planted hard link is only read.
func Out(out string) (*OutLock, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s: its directory %s does not exist", out, filepath.Dir(abs))
	}
	path := abs + ".lock"
	l, ok, err := tryLock(path, unix.LOCK_EX)
	if err != nil {
		return nil, err
	}
	if !ok {
		who := ""
		if h := Holders(path); len(h) > 0 {
			who = fmt.Sprintf(" (PID %d)", h[0])
		}
		return nil, fmt.Errorf("%s: %w%s; wait for it to finish or write another file", out, ErrOutBusy, who)
	}
	return &OutLock{l: l}, nil
}

// Release removes the lock file and drops the lock.
func (o *OutLock) Release() error {
	if o == nil || o.l == nil {
		return nil
	}
	err := os.Remove(o.l.path) // while still held: see tryLock
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, o.l.unlock())
}
