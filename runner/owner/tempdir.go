package owner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempDirPrefix starts the name of every run's work directory.
const TempDirPrefix = "synergy-profile"

// MkdirTemp makes a work directory in dir (os.TempDir() when empty) named
// "<prefix>-PID-START-<random>" after this process, mode 0700: only this
// run's user may enter it.
func MkdirTemp(dir, prefix string) (string, error) {
	me, err := Self()
	if err != nil {
		return "", fmt.Errorf("identify this process: %w", err)
	}
	d, err := os.MkdirTemp(dir, prefix+"-"+me.String()+"-*")
	if err != nil {
		return "", err
	}
	// MkdirTemp asks for 0700; the umask can only take bits away, but
	// say it outright.
	if err := os.Chmod(d, 0o700); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// ReapTempDirs removes the directories in dir (os.TempDir() when empty)
// named by MkdirTemp with prefix whose owner is dead, and returns their
// paths. Directories of live owners and names of other forms are left.
func ReapTempDirs(dir, prefix string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix+"-") {
			continue
		}
		head, id, ok := ParseSuffix(e.Name())
		if !ok || head != prefix || Alive(ProcRoot, id) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}
