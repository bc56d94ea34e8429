package runner

import (
	"reflect"
	"testing"
)

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

func TestParseCPUSet(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"0-3,6", []int{0, 1, 2, 3, 6}, false},
		{"0", []int{0}, false},
		{"0\n", []int{0}, false},
		{"", nil, false},
		{"2,0-1,1", []int{0, 1, 2}, false}, // sorted, deduplicated
		{"3-1", nil, true},
		{"a", nil, true},
		{"-1", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseCPUSet(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUSet(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	// What FormatCPUSet writes parses back.
	for _, set := range [][]int{{0}, {0, 1, 2, 3, 6, 7}, {1, 3, 5}} {
		if back, err := ParseCPUSet(FormatCPUSet(set)); err != nil || !reflect.DeepEqual(back, set) {
			t.Errorf("round trip %v → %q → %v, %v", set, FormatCPUSet(set), back, err)
		}
	}
}
