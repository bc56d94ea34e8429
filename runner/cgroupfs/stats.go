package cgroupfs

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/synergy-sched/synergy/runner"
)

// Keys of a paths map (runner.Handle.CgroupPaths).
const (
	KeyUnified = "unified" // the cgroup v2 directory
	KeyCPU     = "cpu"
	KeyCPUAcct = "cpuacct"
	KeyCPUSet  = "cpuset"
	KeyMemory  = "memory"
	KeyBlkio   = "blkio"
)

// source is one way to get a group of counters: a file in the directory of
// the first of keys present in the paths map.
type source struct {
	keys  []string
	file  string
	id    string // same file read by two groups with the same id is parsed once
	parse func([]byte, *runner.Stats) error
}

// group is a set of counters and its sources in order of preference (v1
// controller files first, then the unified directory).
type group struct {
	what    string
	sources []source
}

func groups() []group {
	cpuacct := []string{KeyCPUAcct, "cpu,cpuacct", "cpuacct,cpu"}
	cpu := []string{KeyCPU, "cpu,cpuacct", "cpuacct,cpu"}
	mem := []string{KeyMemory}
	blkio := []string{KeyBlkio}
	v2 := []string{KeyUnified}
	return []group{
		{"cpu usage", []source{
			{cpuacct, "cpuacct.usage", "cpuacct.usage", parseCPUAcctUsage},
			{v2, "cpu.stat", "cpu.stat/v2", parseCPUStatV2}}},
		{"cpu throttling", []source{
			{cpu, "cpu.stat", "cpu.stat/v1", parseCPUStatV1},
			{v2, "cpu.stat", "cpu.stat/v2", parseCPUStatV2}}},
		{"memory usage", []source{
			{mem, "memory.usage_in_bytes", "usage", parseMemUsage},
			{v2, "memory.current", "usage", parseMemUsage}}},
		{"memory peak", []source{
			{mem, "memory.max_usage_in_bytes", "peak", parseMemPeak},
			{v2, "memory.peak", "peak", parseMemPeak}}},
		{"page cache and anon", []source{
			{mem, "memory.stat", "memory.stat/v1", parseMemStatV1},
			{v2, "memory.stat", "memory.stat/v2", parseMemStatV2}}},
		{"oom kills", []source{
			{mem, "memory.oom_control", "oom", parseOOMKill},
			{v2, "memory.events", "oom", parseOOMKill}}},
		{"io read bytes", []source{
			{blkio, "blkio.throttle.io_service_bytes_recursive", "blkio", parseBlkio},
			{blkio, "blkio.throttle.io_service_bytes", "blkio", parseBlkio},
			{v2, "io.stat", "io.stat", parseIOStat}}},
	}
}

// openFile is a counter file kept open between reads.
type openFile struct {
	path   string
	f      *os.File
	rc     syscall.RawConn
	ids    []string
	parses []func([]byte, *runner.Stats) error
}

// Reader reads one cgroup's counters. It is not safe for concurrent use.
type Reader struct {
	files   []*openFile
	missing []string
	buf     []byte
}

// Open opens the counter files of the cgroup whose directories paths gives
// (runner.Handle.CgroupPaths()). Counters no file offers are listed by Missing; it
// is an error when paths names no directory this package knows, or a file
// exists but cannot be opened.
func Open(paths map[string]string) (*Reader, error) {
	r := &Reader{buf: make([]byte, 16<<10)}
	byPath := map[string]*openFile{}
	known := false
	for _, g := range groups() {
		found := false
		for _, s := range g.sources {
			dir := ""
			for _, k := range s.keys {
				if d := paths[k]; d != "" {
					dir = d
					break
				}
			}
			if dir == "" {
				continue
			}
			known = true
			p := filepath.Join(dir, s.file)
			of := byPath[p]
			if of == nil {
				f, err := os.Open(p)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					r.Close()
					return nil, fmt.Errorf("open cgroup counters (%s): %w", g.what, err)
				}
				rc, err := f.SyscallConn()
				if err != nil {
					f.Close()
					r.Close()
					return nil, fmt.Errorf("open cgroup counters (%s): %s: %w", g.what, p, err)
				}
				of = &openFile{path: p, f: f, rc: rc}
				byPath[p] = of
				r.files = append(r.files, of)
			}
			if !slices.Contains(of.ids, s.id) {
				of.ids = append(of.ids, s.id)
				of.parses = append(of.parses, s.parse)
			}
			found = true
			break
		}
		if !found {
			r.missing = append(r.missing, g.what)
		}
	}
	if !known {
		keys := slices.Sorted(maps.Keys(paths))
		return nil, fmt.Errorf("open cgroup counters: no cpu, cpuacct, memory, blkio or unified directory in cgroup paths %v", keys)
	}
	return r, nil
}

// Missing lists the counter groups no file offered ("memory peak", ...).
func (r *Reader) Missing() []string { return append([]string(nil), r.missing...) }

// Files lists the files being read, in reading order.
func (r *Reader) Files() []string {
	out := make([]string, len(r.files))
	for i, f := range r.files {
		out[i] = f.path
	}
	return out
}

// Read reads every file once. A file that fails does not stop the others:
// the counters read are returned with the errors joined.
func (r *Reader) Read(now time.Time) (runner.Stats, error) {
	c := runner.Stats{Time: now}
	var errs []error
	for _, of := range r.files {
		b, err := r.pread(of)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", of.path, err))
			continue
		}
		for _, parse := range of.parses {
			if err := parse(b, &c); err != nil {
				errs = append(errs, fmt.Errorf("parse %s: %w", of.path, err))
			}
		}
	}
	return c, errors.Join(errs...)
}

// pread reads the whole file from offset 0 with one pread(2). cgroup files
// are seq_files: a read at offset 0 regenerates them, and a short read means
// the end, so one call suffices unless the buffer was filled, in which case
// it grows and the read starts over.
func (r *Reader) pread(of *openFile) ([]byte, error) {
	for {
		var n int
		var rerr error
		err := of.rc.Read(func(fd uintptr) bool {
			for {
				n, rerr = syscall.Pread(int(fd), r.buf, 0)
				if rerr != syscall.EINTR {
					return true
				}
			}
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return nil, err
		}
		if n < len(r.buf) {
			return r.buf[:n], nil
		}
		r.buf = make([]byte, 2*len(r.buf))
	}
}

// Close closes every file. The Reader must not be used afterwards.
func (r *Reader) Close() error {
	var errs []error
	for _, of := range r.files {
		if err := of.f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	r.files = nil
	return errors.Join(errs...)
}

// ReadStats reads the counters of the cgroup whose directories paths gives
// once (Open, Read, Close), for a caller that reads now and then rather than
// at a sampling rate.
func ReadStats(paths map[string]string, now time.Time) (runner.Stats, error) {
	r, err := Open(paths)
	if err != nil {
		return runner.Stats{Time: now}, err
	}
	st, err := r.Read(now)
	return st, errors.Join(err, r.Close())
}
