package host

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func TestBusyPct(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur cpu.TimesStat
		want      float64
		wantOK    bool
	}{
		// Δuser 30 + Δsystem 10 busy, Δidle 50 + Δiowait 10 idle:
		// 100 × 40 / 100 = 40.
		{"mixed", cpu.TimesStat{User: 100, System: 50, Idle: 1000, Iowait: 5},
			cpu.TimesStat{User: 130, System: 60, Idle: 1050, Iowait: 15}, 40, true},
		// Guest time is already inside user: not counted twice.
		// Δuser 50 (incl. Δguest 50), Δidle 50 → 100 × 50 / 100 = 50.
		{"guest inside user", cpu.TimesStat{User: 0, Guest: 0}, cpu.TimesStat{User: 50, Guest: 50, Idle: 50}, 50, true},
		{"all idle", cpu.TimesStat{Idle: 10}, cpu.TimesStat{Idle: 20}, 0, true},
		{"no time passed", cpu.TimesStat{User: 5}, cpu.TimesStat{User: 5}, 0, false},
		{"counters went back", cpu.TimesStat{Idle: 50}, cpu.TimesStat{Idle: 40, User: 20}, 0, false},
	}
	for _, tt := range tests {
		got, ok := busyPct(tt.prev, tt.cur)
		if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: busyPct = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

// fakeSys builds a sysfs tree: block/<name> links (virtual ones under
// devices/virtual) and dev/block/M:m/uevent files.
func fakeSys(t *testing.T, disks map[string]bool, devs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, virtual := range disks {
		target := "../devices/pci0000:00/0000:00:02.0/block/" + name
		if virtual {
			target = "../devices/virtual/block/" + name
		}
		if err := os.Symlink(target, filepath.Join(root, "block", name)); err != nil {
			t.Fatal(err)
		}
	}
	for mm, name := range devs {
		dir := filepath.Join(root, "dev", "block", mm)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte("MAJOR=x\nMINOR=y\nDEVNAME="+name+"\nDEVTYPE=disk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolveDisks(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	d, err := cgroupfs.DeviceOf(wd)
	if err != nil {
		t.Fatal(err)
	}
	mm := d.String()
	sys := fakeSys(t, map[string]bool{"sdb": false, "sda": false, "loop0": true, "dm-0": true},
		map[string]string{mm: "nvme0n1p2"})
	tests := []struct {
		name, path string
		want       string // joined names
		scope      string // substring of the scope
	}{
		{"no path: physical disks only, sorted", "", "sda,sdb", "all physical disks: sda,sdb (no dataset path given)"},
		{"path on a known device", wd, "nvme0n1p2", "nvme0n1p2 (holds " + wd + ")"},
	}
	for _, tt := range tests {
		names, scope, err := resolveDisks(sys, tt.path)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if strings.Join(names, ",") != tt.want || !strings.Contains(scope, tt.scope) {
			t.Errorf("%s: got %v %q, want %s %q", tt.name, names, scope, tt.want, tt.scope)
		}
	}
	// A path whose device the tree does not know falls back to all disks and
	// says why.
	names, scope, err := resolveDisks(fakeSys(t, map[string]bool{"vda": false}, nil), wd)
	if err != nil || strings.Join(names, ",") != "vda" || !strings.Contains(scope, "has no block device") {
		t.Errorf("fallback: %v %q %v", names, scope, err)
	}
	if _, _, err := resolveDisks(sys, filepath.Join(wd, "no-such-dir")); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("missing path: err = %v, want it named", err)
	}
}

// TestInfo_ThisMachine reads the real /proc of this machine.
func TestInfo_ThisMachine(t *testing.T) {
	h, err := Info(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host: %+v", h)
	if h.LogicalCPUs != runtime.NumCPU() {
		t.Errorf("logical cpus = %d, runtime.NumCPU() = %d", h.LogicalCPUs, runtime.NumCPU())
	}
	if h.DRAMBytes <= 0 || h.CPUModel == "" || h.Hostname == "" {
		t.Errorf("implausible host info: %+v", h)
	}
	if _, err := Info(Options{ProcRoot: t.TempDir()}); err == nil {
		t.Error("Info read an empty proc root without error")
	}
}

// TestSampler_ThisMachine samples the real host twice around some CPU work
// and a read of a file with its cache dropped.
func TestSampler_ThisMachine(t *testing.T) {
	wd, _ := os.Getwd()
	s, err := NewSampler(Options{DiskPath: wd})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("disk scope: %s", s.DiskScope())
	var r1, r2 sample.Record
	if err := s.Sample(time.Now(), &r1); err != nil {
		t.Fatal(err)
	}
	if _, ok := r1.Get(SeriesCPUPct); ok {
		t.Error("host_cpu_pct on the first tick, with nothing to compare to")
	}
	spin(20 * time.Millisecond)
	if err := s.Sample(time.Now(), &r2); err != nil {
		t.Fatal(err)
	}
	pct, ok := r2.Get(SeriesCPUPct)
	if !ok || pct <= 0 || pct > 100 {
		t.Errorf("host_cpu_pct = %v, %v after spinning; want in (0, 100]", pct, ok)
	}
	used, _ := r2.Get(SeriesMemUsedBytes)
	avail, _ := r2.Get(SeriesMemAvailBytes)
	if used <= 0 || avail <= 0 {
		t.Errorf("memory used %v, available %v; want both > 0", used, avail)
	}
	if len(s.disks) > 0 {
		if v, ok := r2.Get(SeriesDiskReadBytes); !ok || v <= 0 {
			t.Errorf("%s = %v, %v for %q; want > 0 (this machine booted from it)", SeriesDiskReadBytes, v, ok, s.DiskScope())
		}
	}
	t.Logf("record: %v", r2.Values)

	// A tmpfs path has no block device: the sampler falls back and says so.
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		s, err := NewSampler(Options{DiskPath: "/dev/shm"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.DiskScope(), "/dev/shm has no block device") {
			t.Errorf("/dev/shm scope = %q", s.DiskScope())
		}
	}
}

// spin burns CPU for about d, so the host is not idle between samples.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		x++
	}
	_ = x
}

func BenchmarkSample(b *testing.B) {
	s, err := NewSampler(Options{DiskPath: "."})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var r sample.Record
		if err := s.Sample(time.Now(), &r); err != nil {
			b.Fatal(err)
		}
	}
}
