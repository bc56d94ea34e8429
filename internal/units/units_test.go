package units

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
		{"500MB", 500e6, ""},
		{"40MB", 40e6, ""},
		{" 2 GiB ", 2 << 30, ""},
		{"", 0, "is not a size"},
		{"MiB", 0, "is not a size"},
		{"8XB", 0, `unit "XB"`},
		{"-1GiB", 0, "is not a size"},
		{"-1MiB", 0, "is not a size"},
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

func TestFormatMemLimit(t *testing.T) {
	for in, want := range map[int64]string{0: "unlimited", -1: "unlimited", 64 << 20: "64MiB"} {
		if got := FormatMemLimit(in); got != want {
			t.Errorf("FormatMemLimit(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatGB(t *testing.T) {
	// 12.5e9 / 1e9 = 12.5; 62.5e6 → 0.0625 → 0.06; 1.2345e9 → 1.23
	for in, want := range map[float64]string{12.5e9: "12.5GB", 500e9: "500GB", 62.5e6: "0.06GB", 0: "0GB", 1.2345e9: "1.23GB"} {
		if got := FormatGB(in); got != want {
			t.Errorf("FormatGB(%g) = %q, want %q", in, got, want)
		}
	}
}
