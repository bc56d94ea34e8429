package cpuspeed

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

func TestMeasure_LeavesTheCallersThreadWhereItWas(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if before.Count() < 1 {
		t.Fatal("no CPU in this thread's affinity")
	}
	cpu := -1
	for c := 0; cpu < 0; c++ {
		if before.IsSet(c) {
			cpu = c
		}
	}
	mops, err := Measure(cpu, DefaultRounds)
	if err != nil {
		t.Fatal(err)
	}
	// A 2 GHz core runs the loop at hundreds of millions of rounds a
	// second; anything from 1 to 100,000 means the clock and the count met.
	if mops < 1 || mops > 1e5 {
		t.Errorf("Measure(%d) = %g million rounds/s, want a CPU's pace", cpu, mops)
	}
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("the caller's affinity changed from %v to %v: the pinning leaked", before, after)
	}
}

func TestMeasure_ACPUThatIsNotThereIsAnError(t *testing.T) {
	_, err := Measure(1000, DefaultRounds) // unix.CPUSet holds 1024 CPUs; no test host has 1001
	if err == nil || !strings.Contains(err.Error(), "CPU 1000") {
		t.Fatalf("Measure(1000) error = %v, want one naming CPU 1000", err)
	}
}

func TestSampler_ReadsTheJobsCpusetEveryTick(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cpuset.cpus")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(map[string]string{"cpuset": dir, "memory": t.TempDir()})
	if s.cpusetFile != file {
		t.Fatalf("cpuset file %q, want %q", s.cpusetFile, file)
	}
	write("0\n")
	var rec sample.Record
	if err := s.Sample(rec.Time, &rec); err != nil {
		t.Fatal(err)
	}
	if v, ok := rec.Get(SeriesMOps); !ok || v <= 0 {
		t.Fatalf("%s = %v (set %v), want a positive rate", SeriesMOps, v, ok)
	}
	// A cpuset the kernel would not write, then one with a CPU that is
	// not there: each tick fails with its reason, naming the file or CPU.
	write("0-\n")
	if err := s.Sample(rec.Time, &rec); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("bad cpuset: error %v, want one naming %s", err, file)
	}
	write("1000\n")
	if err := s.Sample(rec.Time, &rec); err == nil || !strings.Contains(err.Error(), "CPU 1000") {
		t.Errorf("absent CPU: error %v, want one naming CPU 1000", err)
	}
	os.Remove(file) // the cgroup is gone
	if err := s.Sample(rec.Time, &rec); err == nil {
		t.Error("no cpuset file: no error")
	}
}

func TestNew_CgroupV2ReadsTheEffectiveCpuset(t *testing.T) {
	s := New(map[string]string{cgroupfs.KeyUnified: "/sys/fs/cgroup/job"})
	if want := "/sys/fs/cgroup/job/cpuset.cpus.effective"; s.cpusetFile != want {
		t.Errorf("cpuset file %q, want %q", s.cpusetFile, want)
	}
}

func TestSampler_WithoutACgroupProbesThisProcesssCPUs(t *testing.T) {
	s := New(nil)
	cpus, err := s.cpus()
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if len(cpus) != set.Count() {
		t.Errorf("probes %v, want the %d CPUs of this process's affinity", cpus, set.Count())
	}
	var rec sample.Record
	if err := s.Sample(rec.Time, &rec); err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.Get(SeriesMOps); !ok {
		t.Error("no rate recorded")
	}
}

func TestSampler_ALargeCpusetIsProbedInTurns(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpuset.cpus"), []byte("0-9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(map[string]string{"cpuset": dir})
	var probed []int
	s.measure = func(cpu, _ int) (float64, error) { // a fake: this host may have 2 CPUs
		probed = append(probed, cpu)
		return float64(100 + cpu), nil
	}
	var rec sample.Record
	for _, want := range [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}} {
		probed = nil
		if err := s.Sample(rec.Time, &rec); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(probed, want) {
			t.Errorf("a tick probed CPUs %v, want %v", probed, want)
		}
		mean := 100 + float64(want[0]+want[1]+want[2]+want[3])/4
		if v, _ := rec.Get(SeriesMOps); v != mean {
			t.Errorf("%s = %g, want the mean of the probed CPUs' rates, %g", SeriesMOps, v, mean)
		}
	}
}
