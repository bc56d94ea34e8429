package synthtrain

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a human size the way the rest of synergy writes them:
// "512MiB", "1GiB", "1.5GB", "64k", "4096". Binary suffixes (K, KiB, M,
// MiB, G, GiB, T, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB)
// powers of 1000, a bare number is bytes. It is a local copy of the
// runner's parser because a model must not import the profiler's packages.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	mult := sizeUnit(unit)
	if mult == 0 {
		return 0, fmt.Errorf("%q is not a size (unit %q: use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, unit)
	}
	if v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(math.Round(v * mult)), nil
}

// sizeUnit returns the multiplier of a lower-case unit, 0 if unknown.
func sizeUnit(unit string) float64 {
	switch unit {
	case "", "b":
		return 1
	case "k", "kib":
		return 1 << 10
	case "m", "mib":
		return 1 << 20
	case "g", "gib":
		return 1 << 30
	case "t", "tib":
		return 1 << 40
	case "kb":
		return 1e3
	case "mb":
		return 1e6
	case "gb":
		return 1e9
	case "tb":
		return 1e12
	}
	return 0
}

// formatSize renders bytes with a binary unit: "512MiB", "1.5GiB".
func formatSize(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(b), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".") + units[u]
}
