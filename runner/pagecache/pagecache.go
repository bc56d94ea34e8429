package pagecache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openRegular opens a file the walk found regular, and only if it still is
// one: never through a symlink swapped in since (that would evict, warm or
// read another file) and without waiting on a FIFO (whose open blocks).
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is no longer a regular file", p)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// walkFiles calls fn for every regular file under root (root may be a file
// itself), in lexical order.
func walkFiles(root string, fn func(path string, size int64) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return fn(p, info.Size())
	})
}

// Evict drops the page cache of every regular file under dir and returns
// how many files it advised. Dirty pages cannot be dropped, so each file is
// fdatasync'ed first: cheap for the read-only datasets this is meant for,
// and it makes eviction also work on a freshly generated dataset.
func Evict(dir string) (files int, err error) {
	err = walkFiles(dir, func(p string, _ int64) error {
		f, err := openRegular(p)
		if err != nil {
			return fmt.Errorf("evict %s: %w", p, err)
		}
		defer f.Close()
		fd := int(f.Fd())
		if err := unix.Fdatasync(fd); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("evict %s: sync: %w", p, err)
		}
		if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("evict %s: fadvise DONTNEED: %w", p, err)
		}
		files++
		return nil
	})
	return files, err
}

// Resident returns how many bytes of the regular files under dir are in the
// page cache, and their total size. A resident last page counts only the
// part of it inside the file.
func Resident(dir string) (residentBytes, totalBytes int64, err error) {
	page := int64(unix.Getpagesize())
	err = walkFiles(dir, func(p string, size int64) error {
		totalBytes += size
		if size == 0 {
			return nil
		}
		f, err := openRegular(p)
		if err != nil {
			return fmt.Errorf("residency of %s: %w", p, err)
		}
		defer f.Close()
		mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("residency of %s: mmap: %w", p, err)
		}
		defer unix.Munmap(mem)
		vec := make([]byte, (size+page-1)/page)
		if err := mincore(mem, vec); err != nil {
			return fmt.Errorf("residency of %s: mincore: %w", p, err)
		}
		for i, v := range vec {
			if v&1 == 0 {
				continue
			}
			residentBytes += min(page, size-int64(i)*page)
		}
		return nil
	})
	return residentBytes, totalBytes, err
}

// Warm reads every regular file under dir once, so that it is cached (and
// charged to the caller's memory cgroup), and returns the bytes read.
func Warm(dir string) (bytesRead int64, err error) {
	buf := make([]byte, 1<<20)
	err = walkFiles(dir, func(p string, _ int64) error {
		n, err := readFile(p, buf, -1)
		bytesRead += n
		return err
	})
	return bytesRead, err
}

// readFile reads p into buf repeatedly, at most limit bytes (all if < 0).
func readFile(p string, buf []byte, limit int64) (int64, error) {
	f, err := openRegular(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read %s: %w", p, err)
		}
	}
}

// ColdReadMBPerS evicts dir, then reads its files sequentially in lexical
// order, up to limitBytes in all (all of them if limitBytes <= 0), and
// returns the bandwidth in MB/s (10^6 bytes per second) and the bytes read.
// It records the host's cold read bandwidth for the profile; on a virtual
// disk backed by the host's cache it can be far above the physical disk's.
func ColdReadMBPerS(dir string, limitBytes int64) (mbPerS float64, bytesRead int64, err error) {
	if _, err := Evict(dir); err != nil {
		return 0, 0, fmt.Errorf("cold read of %s: %w", dir, err)
	}
	buf := make([]byte, 1<<20)
	errDone := errors.New("limit reached")
	start := time.Now()
	err = walkFiles(dir, func(p string, _ int64) error {
		left := int64(-1)
		if limitBytes > 0 {
			left = limitBytes - bytesRead
		}
		n, err := readFile(p, buf, left)
		bytesRead += n
		if err != nil {
			return err
		}
		if limitBytes > 0 && bytesRead >= limitBytes {
			return errDone
		}
		return nil
	})
	secs := time.Since(start).Seconds()
	if err != nil && err != errDone {
		return 0, bytesRead, fmt.Errorf("cold read of %s: %w", dir, err)
	}
	if bytesRead == 0 {
		return 0, 0, fmt.Errorf("cold read of %s: no data to read", dir)
	}
	return float64(bytesRead) / 1e6 / secs, bytesRead, nil
}

// mincore fills vec with one byte per page of mem, bit 0 set when the page
// is resident (x/sys/unix has no wrapper for it).
func mincore(mem, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
