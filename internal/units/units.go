package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// ParseBytes parses a human size: "512MiB", "1GiB", "1.5GB", "4096", "64k".
// Binary suffixes (KiB, MiB, GiB, TiB and K, M, G, T) are powers of 1024;
// decimal ones (KB, MB, GB, TB) powers of 1000; the unit's case does not
// matter. A bare number is bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	i := strings.IndexFunc(t, func(r rune) bool { return !(unicode.IsDigit(r) || r == '.') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("%q is not a size (unit %q: use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, unit)
	}
	b := v * mult
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(math.Round(b)), nil
}

// sizeUnits maps a lower-case unit to its multiplier.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// FormatBytes renders bytes with a binary unit and at most two decimals:
// "512MiB", "1.5GiB", "1023B". Sizes a flag carries parse back exactly.
func FormatBytes(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(b)
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + units[u]
}

// FormatMemLimit renders a memory limit as labels and tables show it:
// FormatBytes, or "unlimited" for 0 (and any negative value), the value
// that means "no limit" in runner.Limits and the profile.
func FormatMemLimit(b int64) string {
	if b <= 0 {
		return "unlimited"
	}
	return FormatBytes(b)
}

// FormatGB renders bytes in decimal gigabytes, as Synergy's tables count
// memory ("GB" of 10^9 bytes): at most two decimals, trailing zeros
// dropped ("12.5GB", "500GB", "0.06GB").
func FormatGB(b float64) string {
	return strconv.FormatFloat(math.Round(b/1e7)/100, 'f', -1, 64) + "GB"
}
