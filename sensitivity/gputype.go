package sensitivity

import (
	"strconv"
	"strings"
	"unicode"
)

// MaxGPUTypeLen bounds gpu.type: a short type name ("v100", "h100"), not a
// description.
const MaxGPUTypeLen = 64

// GPUTypeFromDevice is the short GPU type of an NVML device name, as a typed
// cluster names its servers' gpu_type: the name lower-cased and split at
// spaces, '-' and '_', and the first part holding a digit ("Tesla
// V100-SXM2-16GB" → "v100", "NVIDIA H100 80GB HBM3" → "h100", "Tesla T4" →
// "t4"); a part of digits only is joined to the word before it unless that
// word is the vendor's ("NVIDIA GeForce RTX 3090" → "rtx3090"). A name with
// no digit is returned lower-cased with its parts joined by '-'; an empty
// name gives "".
func GPUTypeFromDevice(name string) string {
	parts := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return unicode.IsSpace(r) || r == '-' || r == '_'
	})
	vendor := map[string]bool{"nvidia": true, "tesla": true, "geforce": true, "quadro": true}
	for i, p := range parts {
		if strings.IndexFunc(p, unicode.IsDigit) < 0 {
			continue
		}
		if strings.IndexFunc(p, unicode.IsLetter) < 0 && i > 0 && !vendor[parts[i-1]] {
			return parts[i-1] + p
		}
		return p
	}
	return strings.Join(parts, "-")
}

// gpuType checks gpu.type: empty, or a short name without spaces or control
// characters, given only where the profile says where its step times came
// from (mode nvml or emulated).
func (c *checker) gpuType(g *GPUInfo) {
	switch {
	case g.Type == "":
	case g.Mode == GPUModeNone:
		c.fail("gpu.type", strconv.Quote(g.Type), "", "is set but gpu.mode is %q: a profile that names no GPU and no emulation measured no GPU type", g.Mode)
	case len(g.Type) > MaxGPUTypeLen:
		c.fail("gpu.type", strconv.Quote(g.Type), "", "is longer than %d bytes: a type name, not a description", MaxGPUTypeLen)
	case strings.IndexFunc(g.Type, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		c.fail("gpu.type", strconv.Quote(g.Type), "", "holds a space or control character (a type name, e.g. v100)")
	}
}
