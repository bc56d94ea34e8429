package profiler

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultMemLimits_AroundTheDataset(t *testing.T) {
	dir := t.TempDir()
	// 256 MiB in two files (sparse: only the sizes count)
	for _, name := range []string{"a", "sub/b"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(128 << 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	got, err := DefaultMemLimits(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 0.25, 0.5 and 1.25 of 256 MiB, each + 64 MiB of working set:
	// 64+64 = 128, 128+64 = 192, 320+64 = 384 MiB
	if want := []int64{128 << 20, 192 << 20, 384 << 20}; !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultMemLimits = %v, want %v", got, want)
	}
	if _, err := DefaultMemLimits(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing dataset: err = %v, want one naming it", err)
	}
}

func TestCPUsWithinHost(t *testing.T) {
	cases := []struct {
		name    string
		cpus    []float64
		host    int
		wantErr string
	}{
		{"within", []float64{1, 2, 4}, 4, ""},
		{"fraction within", []float64{0.5, 3.5}, 4, ""},
		{"above", []float64{1, 8}, 4, "8 cores asked but this host has 4 online CPUs"},
		{"fraction needing one core more", []float64{4.5}, 4, "4.5 cores asked but this host has 4 online CPUs (a point pins ceil(cpus) = 5 cores)"},
		{"host unknown", []float64{64}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CPUsWithinHost(c.cpus, c.host)
			if (err == nil) != (c.wantErr == "") || (err != nil && err.Error() != c.wantErr) {
				t.Errorf("CPUsWithinHost(%v, %d) = %v, want %q", c.cpus, c.host, err, c.wantErr)
			}
		})
	}
}
