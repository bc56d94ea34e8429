package runner

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"4096", 4096, ""},
		{"512MiB", 512 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"1.5GiB", 3 << 29, ""}, // 1.5 × 2^30
		{"64k", 64 << 10, ""},
		{"500GB", 500e9, ""},
		{"40MB", 40e6, ""},
		{" 2 GiB ", 2 << 30, ""},
		{"", 0, "is not a size"},
		{"8XB", 0, `unit "XB"`},
		{"-1GiB", 0, "is not a size"},
		{"1e400", 0, "is not a size"},
		{"99999999TiB", 0, "too large"},
	} {
		got, err := ParseBytes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBytes(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0B", 1023: "1023B", 1 << 10: "1KiB", 64 << 20: "64MiB",
		3 << 29: "1.5GiB", 1<<30 + 1<<20: "1GiB", // 1.000977 rounds to 1
		25276514304: "23.54GiB",
	} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
	// Sizes a flag would carry format and parse back exactly.
	for _, in := range []int64{1 << 10, 64 << 20, 3 << 29, 24 << 30} {
		if back, err := ParseBytes(FormatBytes(in)); err != nil || back != in {
			t.Errorf("round trip %d → %q → %d, %v", in, FormatBytes(in), back, err)
		}
	}
}

func TestCPUSetAndQuota(t *testing.T) {
	online := []int{0, 1, 2, 3, 6, 7}
	for _, tc := range []struct {
		cpus float64
		want string
		err  bool
	}{
		{0, "0-3,6-7", false}, // no limit: all online CPUs
		{0.5, "0", false},     // half a core: one pinned core, quota 0.5
		{2, "0-1", false},
		{4.5, "0-3,6", false}, // ceil(4.5) = 5 cores, in online order
		{7, "", true},         // more than online
	} {
		set, err := CPUSetFor(tc.cpus, online)
		if tc.err {
			if err == nil {
				t.Errorf("CPUSetFor(%v): want an error", tc.cpus)
			}
			continue
		}
		if err != nil || FormatCPUSet(set) != tc.want {
			t.Errorf("CPUSetFor(%v) = %v (%q), %v; want %q", tc.cpus, set, FormatCPUSet(set), err, tc.want)
		}
	}
	// quota = cpus × period: 0.5 × 100000 µs = 50000; 2.25 × 100000 = 225000
	for cpus, want := range map[float64]int64{0: 0, 0.5: 50000, 2.25: 225000} {
		if got := QuotaFor(cpus, DefaultCFSPeriodUS); got != want {
			t.Errorf("QuotaFor(%v) = %d, want %d", cpus, got, want)
		}
	}
	l := Limits{CPUs: 1.5, MemLimitBytes: 256 << 20, ReadBPS: 40e6}
	if got := l.String(); got != "cpus=1.5 mem=256MiB read=38.15MiB/s" {
		t.Errorf("Limits.String() = %q", got)
	}
}
