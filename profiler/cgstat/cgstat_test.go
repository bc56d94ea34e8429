package cgstat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/profiler/sample"
	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestPut_OnlyCountersRead(t *testing.T) {
	st := runner.Stats{Time: t0, MemCacheBytes: 4096, MemAnonBytes: 0, CPUUsageSeconds: 1.5,
		Has: runner.StatMemCache | runner.StatMemAnon | runner.StatCPUUsage}
	var rec sample.Record
	Put(st, &rec)
	want := map[string]float64{SeriesMemCacheBytes: 4096, SeriesMemAnonBytes: 0, SeriesCPUUsageS: 1.5}
	if len(rec.Values) != len(want) {
		t.Errorf("series %v, want exactly %v", rec.Names(), want)
	}
	for k, v := range want {
		if got, ok := rec.Get(k); !ok || got != v {
			t.Errorf("%s = %v, %v; want %v (a read 0 is a value)", k, got, ok, v)
		}
	}
	if _, ok := rec.Get(SeriesIOReadBytes); ok {
		t.Error("an absent counter was written as 0")
	}
}

// TestSampler_BadFileDoesNotHideOthers: a file that does not parse is the
// sampler's error, the good values are still written, and the observer
// hears only of clean reads.
func TestSampler_BadFileDoesNotHideOthers(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"memory.stat": "anon 104857600\nfile 419430400\n", "memory.current": "lots\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := cgroupfs.Open(map[string]string{cgroupfs.KeyUnified: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seen []runner.Stats
	s := NewSampler(r, func(st runner.Stats) { seen = append(seen, st) })
	var rec sample.Record
	if err := s.Sample(t0, &rec); err == nil || !strings.Contains(err.Error(), "memory.current") {
		t.Errorf("sampler error = %v, want the bad memory.current", err)
	}
	if v, ok := rec.Get(SeriesMemAnonBytes); !ok || v != 104857600 {
		t.Errorf("sampler dropped the good values with the error: %v", rec.Values)
	}
	if len(seen) != 0 {
		t.Errorf("observer got a read with errors: %+v", seen)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.current"), []byte("536870912\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Sample(t0, &rec); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].MemUsageBytes != 536870912 || seen[0].MemCacheBytes != 419430400 {
		t.Errorf("observer got %+v, want the clean read", seen)
	}
}
