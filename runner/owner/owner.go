// Package owner names the process that made something synergy leaves on the
// host while it runs (a cgroup, a container, a temporary directory), so that
// a later run can tell whether that process is still alive. An owner is a PID
// plus the process's start time (field 22 of /proc/PID/stat, in clock ticks
// since boot): a PID reused by another process after the owner died has
// another start time, so it is never mistaken for the owner.
package owner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ID identifies one process for its lifetime.
type ID struct {
	PID   int
	Start uint64 // start time, clock ticks after boot (/proc/PID/stat field 22)
}

// String is "PID-START", the form used in names and labels.
func (id ID) String() string { return fmt.Sprintf("%d-%d", id.PID, id.Start) }

// Parse reads "PID-START".
func Parse(s string) (ID, error) {
	p, st, ok := strings.Cut(s, "-")
	if !ok {
		return ID{}, fmt.Errorf("owner %q: want PID-START", s)
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(st, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return ID{}, fmt.Errorf("owner %q: want PID-START with a positive PID and a start time", s)
	}
	return ID{PID: pid, Start: start}, nil
}

// ProcRoot is where procfs is mounted.
const ProcRoot = "/proc"

var (
	selfOnce sync.Once
	self     ID
	selfErr  error
)

// Self is this process.
func Self() (ID, error) {
	selfOnce.Do(func() { self, selfErr = Of(ProcRoot, os.Getpid()) })
	return self, selfErr
}

// Of reads process pid's identity from procRoot/PID/stat; a process that
// does not exist gives an error wrapping fs.ErrNotExist.
func Of(procRoot string, pid int) (ID, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return ID{}, err
	}
	start, err := startTime(string(b))
	if err != nil {
		return ID{}, fmt.Errorf("%s: %w", filepath.Join(procRoot, strconv.Itoa(pid), "stat"), err)
	}
	return ID{PID: pid, Start: start}, nil
}

// startTime is field 22 of a /proc/PID/stat line. The command name (field
// 2) is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted after its last ')'.
func startTime(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name in parentheses")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	const field = 22
	if len(f) < field-2 {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(f), field-2)
	}
	v, err := strconv.ParseUint(f[field-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("start time %q: %w", f[field-3], err)
	}
	return v, nil
}

// Alive reports whether the process id names still runs (same PID, same
// start time, not a zombie: a process killed outright stays one until its
// parent reaps it). An unreadable procfs entry other than a missing one
// counts as alive: nothing is reaped on a guess.
func Alive(procRoot string, id ID) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(id.PID), "stat"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		return true
	}
	start, err := startTime(string(b))
	if err != nil {
		return true
	}
	return start == id.Start && !zombie(string(b))
}

// zombie reports whether a /proc/PID/stat line is of a process that has
// ended (state Z or X).
func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// ParseSuffix reads an owner from the end of a name built as
// "<anything>-PID-START-<n>" (n a number: a sequence or a random suffix),
// and returns the part before it.
func ParseSuffix(name string) (head string, id ID, ok bool) {
	parts := strings.Split(name, "-")
	if len(parts) < 4 {
		return "", ID{}, false
	}
	n := len(parts)
	for _, p := range parts[n-3:] {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", ID{}, false
		}
	}
	id, err := Parse(parts[n-3] + "-" + parts[n-2])
	if err != nil {
		return "", ID{}, false
	}
	return strings.Join(parts[:n-3], "-"), id, true
}
