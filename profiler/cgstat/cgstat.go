package cgstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/synergy-sched/synergy/profiler/sample"
)

// Field is a bit set of the counters a Counters holds.
type Field uint16

// The counters, one bit each.
const (
	CPUUsage Field = 1 << iota
	CPUPeriods
	CPUThrottledPeriods
	CPUThrottledSeconds
	MemUsage
	MemPeak
	MemCache
	MemAnon
	OOMKills
	IORead
)

// Counters are one read of a job's cgroup. Only the fields flagged in Has
// were read; the others are zero and mean "no data".
type Counters struct {
	Time                time.Time
	CPUUsageSeconds     float64
	CPUPeriods          uint64
	CPUThrottledPeriods uint64
	CPUThrottledSeconds float64
	MemUsageBytes       int64
	MemPeakBytes        int64
	MemCacheBytes       int64 // page cache charged to the group
	MemAnonBytes        int64 // anonymous memory (rss)
	IOReadBytes         int64
	OOMKills            uint64
	Has                 Field
}

// Series names written by Put.
const (
	SeriesCPUUsageS          = "cg_cpu_usage_s"
	SeriesCPUPeriods         = "cg_cpu_periods"
	SeriesCPUThrottledPeriod = "cg_cpu_throttled_periods"
	SeriesCPUThrottledS      = "cg_cpu_throttled_s"
	SeriesMemUsageBytes      = "cg_mem_usage_bytes"
	SeriesMemPeakBytes       = "cg_mem_peak_bytes"
	SeriesMemCacheBytes      = "cg_mem_cache_bytes"
	SeriesMemAnonBytes       = "cg_mem_anon_bytes"
	SeriesOOMKills           = "cg_mem_oom_kills"
	SeriesIOReadBytes        = "cg_io_read_bytes"
)

// Put sets the counters that were read on rec.
func (c Counters) Put(rec *sample.Record) {
	set := func(f Field, name string, v float64) {
		if c.Has&f != 0 {
			rec.Set(name, v)
		}
	}
	set(CPUUsage, SeriesCPUUsageS, c.CPUUsageSeconds)
	set(CPUPeriods, SeriesCPUPeriods, float64(c.CPUPeriods))
	set(CPUThrottledPeriods, SeriesCPUThrottledPeriod, float64(c.CPUThrottledPeriods))
	set(CPUThrottledSeconds, SeriesCPUThrottledS, c.CPUThrottledSeconds)
	set(MemUsage, SeriesMemUsageBytes, float64(c.MemUsageBytes))
	set(MemPeak, SeriesMemPeakBytes, float64(c.MemPeakBytes))
	set(MemCache, SeriesMemCacheBytes, float64(c.MemCacheBytes))
	set(MemAnon, SeriesMemAnonBytes, float64(c.MemAnonBytes))
	set(OOMKills, SeriesOOMKills, float64(c.OOMKills))
	set(IORead, SeriesIOReadBytes, float64(c.IOReadBytes))
}

// Controller keys of Handle.CgroupPaths.
const (
	KeyUnified = "unified" // the cgroup v2 directory
	KeyCPU     = "cpu"
	KeyCPUAcct = "cpuacct"
	KeyMemory  = "memory"
	KeyBlkio   = "blkio"
)

// source is one way to get a group of counters: a file in the directory of
// the first of keys present in the paths map.
type source struct {
	keys  []string
	file  string
	id    string // same file read by two groups with the same id is parsed once
	parse func([]byte, *Counters) error
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
	parses []func([]byte, *Counters) error
}

// Reader reads one cgroup's counters. It is not safe for concurrent use.
type Reader struct {
	files   []*openFile
	missing []string
	buf     []byte
}

// Open opens the counter files of the cgroup whose directories paths gives
// (Handle.CgroupPaths()). Counters no file offers are listed by Missing; it
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
			if !contains(of.ids, s.id) {
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
		keys := make([]string, 0, len(paths))
		for k := range paths {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("open cgroup counters: no cpu, cpuacct, memory, blkio or unified directory in cgroup paths %v", keys)
	}
	return r, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
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
func (r *Reader) Read(now time.Time) (Counters, error) {
	c := Counters{Time: now}
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

// Sampler adapts a Reader to profiler/sample under the name "cgroup".
type Sampler struct{ r *Reader }

var _ sample.Sampler = (*Sampler)(nil)

// NewSampler returns a sampler reading r; closing r stays the caller's job.
func NewSampler(r *Reader) *Sampler { return &Sampler{r: r} }

// Name is "cgroup".
func (s *Sampler) Name() string { return "cgroup" }

// Sample puts whatever counters were read, and returns the read errors.
func (s *Sampler) Sample(now time.Time, out *sample.Record) error {
	c, err := s.r.Read(now)
	c.Put(out)
	return err
}
