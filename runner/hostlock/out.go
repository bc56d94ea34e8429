package hostlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrOutBusy is the error of Out when another run writes the profile.
var ErrOutBusy = errors.New("another synergy run is writing this profile")

// OutLock is a held "<out>.lock".
type OutLock struct{ l *lockFile }

// Out takes the lock of profile path out ("<out>.lock", next to it) or
// fails at once with ErrOutBusy naming the run that holds it.
func Out(out string) (*OutLock, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	path := abs + ".lock"
	l, ok, err := tryLock(path, unix.LOCK_EX)
	if err != nil {
		return nil, err
	}
	if !ok {
		who := ""
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				who = fmt.Sprintf(" (PID %d)", pid)
			}
		}
		if who == "" {
			if h := Holders(path); len(h) > 0 {
				who = fmt.Sprintf(" (PID %d)", h[0])
			}
		}
		return nil, fmt.Errorf("%s: %w%s; wait for it to finish or write another file", out, ErrOutBusy, who)
	}
	l.writePID()
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
