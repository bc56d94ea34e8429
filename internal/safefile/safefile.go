package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Dir is a directory opened without following a symlink: files made
// through it are made in that directory, whatever its path names later.
type Dir struct {
	f    *os.File
	path string
}

// MakeDir makes the directory path (its parents as MkdirAll does, the last
// element with mkdirat relative to its parent) and opens it with
// O_NOFOLLOW, so that a symlink planted at path is refused rather than
// followed, and a directory swapped in after the check is never the one
// written to.
func MakeDir(path string, perm os.FileMode) (*Dir, error) {
	parent, name := filepath.Split(filepath.Clean(path))
	if parent == "" {
		parent = "."
	}
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("directory %s: not a directory name", path)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("directory %s: %w", path, err)
	}
	pf, err := os.OpenFile(parent, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", path, err)
	}
	defer pf.Close()
	pfd := int(pf.Fd())
	if err := syscall.Mkdirat(pfd, name, uint32(perm.Perm())); err != nil && !errors.Is(err, syscall.EEXIST) {
		return nil, fmt.Errorf("directory %s: %w", path, err)
	}
	fd, err := syscall.Openat(pfd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", path, refusal(err, "is not a directory (a symlink is not followed)"))
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// refusal turns the errors of an O_NOFOLLOW open into a sentence.
func refusal(err error, what string) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
		return errors.New(what)
	}
	return err
}

// Path is the path the directory was opened by.
func (d *Dir) Path() string { return d.path }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Create makes the file name in d afresh for writing: whatever had that
// name (an earlier run's file, or a symlink or hard link planted to make
// root write elsewhere) is unlinked, not opened, and the file is created
// with O_EXCL|O_NOFOLLOW, so no file that this call did not create is
// ever opened, truncated or written. name must be one path element.
func (d *Dir) Create(name string, perm os.FileMode) (*os.File, error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return nil, fmt.Errorf("create %q in %s: not a file name", name, d.path)
	}
	full := filepath.Join(d.path, name)
	dfd := int(d.f.Fd())
	for range 10 {
		err := syscall.Unlinkat(dfd, name)
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EPERM) {
				return nil, fmt.Errorf("create %s: a directory is in the way", full)
			}
			return nil, fmt.Errorf("create %s: %w", full, err)
		}
		fd, err := syscall.Openat(dfd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, syscall.EEXIST) {
			continue // made again between the unlink and the open: unlink it again
		}
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", full, err)
		}
		return os.NewFile(uintptr(fd), full), nil
	}
	return nil, fmt.Errorf("create %s: something keeps making that name", full)
}

// WriteFile writes data to a fresh file name in d (see Create).
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := d.Create(name, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// Open opens path for reading if it is a regular file of at most max bytes,
// and returns it with its size. A FIFO, device, socket or directory is
// refused without being read (a FIFO's open does not wait for a writer),
// and so is a larger file, by its size, before anything is read; what
// ("profile", "cluster") names the file in the errors.
func Open(path string, max int64, what string) (*os.File, int64, error) {
	return open(path, max, what, 0)
}

// OpenNoFollow is Open refusing a symlink at path's last element: for a
// file whose name a profile records in a directory others may write (a
// timeline), so that a planted link does not make the reader's user read
// another file.
func OpenNoFollow(path string, max int64, what string) (*os.File, int64, error) {
	f, size, err := open(path, max, what, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("%s is a symlink, not a %s file (not followed)", path, what)
	}
	return f, size, err
}

func open(path string, max int64, what string, flags int) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %s, not a %s file", path, Kind(st.Mode()), what)
	}
	if st.Size() > max {
		f.Close()
		return nil, 0, TooBig(path, what, st.Size(), max)
	}
	return f, st.Size(), nil
}

// ReadFile reads the regular file path of at most max bytes (see Open); a
// file that grows past max while read is refused too.
func ReadFile(path string, max int64, what string) ([]byte, error) {
	f, size, err := Open(path, max, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, size+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > max {
			return nil, fmt.Errorf("%s grew past %s while read, above the %s a %s file may hold", path, fmtBytes(max), fmtBytes(max), what)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// TooBig is the error for a file above its bound.
func TooBig(path, what string, size, max int64) error {
	return fmt.Errorf("%s is %s, above the %s a %s file may hold (is it one?)", path, fmtBytes(size), fmtBytes(max), what)
}

// Kind names a file's type for an error: "a directory", "a device".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
