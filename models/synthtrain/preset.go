package synthtrain

import (
	"fmt"
	"strings"
	"time"
)

// codec is what a preset does with one sample: make its file, and turn the
// file's bytes into the sample's slot of a batch tensor.
type codec interface {
	// generate returns the bytes of sample idx of a dataset seeded with seed.
	// It is a pure function of its arguments.
	generate(seed uint64, idx int) ([]byte, error)
	// tensorLen is the number of float32 one processed sample occupies.
	tensorLen() int
	// process decodes and augments data into dst (len tensorLen), drawing
	// augmentation randomness from r.
	process(data []byte, r *rng, dst []float32) error
}

// Preset is a kind of workload: its files, its per-sample CPU work and its
// defaults. The defaults are calibrated for a 2-core machine (see doc.go).
type Preset struct {
	// Name is the value of --preset.
	Name string
	// Ext is the file extension of its samples, with the dot.
	Ext string
	// Batch is the default --batch.
	Batch int
	// GPUStep is the default --gpu-step: the emulated forward+backward time
	// of one batch.
	GPUStep time.Duration
	// Sample describes one sample file.
	Sample string
	// Work describes what the loader does per sample.
	Work string
	// BoundBy says what limits throughput on the reference machine.
	BoundBy string

	codec codec
}

// Presets returns the presets in a fixed order.
func Presets() []Preset {
	return []Preset{
		{
			Name: "image", Ext: ".jpg", Batch: 32, GPUStep: 8 * time.Millisecond,
			Sample:  "JPEG 500x375 q90, ~90 KiB",
			Work:    "decode, random resized crop, bilinear 224x224, flip, normalise (~4.7 ms)",
			BoundBy: "CPU (decode): scales with cores",
			codec:   imageCodec{},
		},
		{
			Name: "audio", Ext: ".wav", Batch: 16, GPUStep: 40 * time.Millisecond,
			Sample:  "16-bit mono PCM WAV, 1-2 MiB",
			Work:    "read all, energy + zero-crossing features on 1/4 of it (~0.3 ms)",
			BoundBy: "GPU step when cached; fetch when not cached and reads are throttled",
			codec:   audioCodec{},
		},
		{
			Name: "language", Ext: ".tok", Batch: 64, GPUStep: 50 * time.Millisecond,
			Sample:  "uint16 token ids, 2-8 KiB",
			Work:    "read, pad/truncate to 2048 tokens (~µs)",
			BoundBy: "GPU step: insensitive to cores and memory",
			codec:   languageCodec{},
		},
	}
}

// PresetNames returns "image|audio|language".
func PresetNames() string {
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return strings.Join(names, "|")
}

// LookupPreset returns the preset called name.
func LookupPreset(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (want %s)", name, PresetNames())
}

// PresetTable renders the presets' defaults as a plain-text table, for
// --help and the package documentation.
func PresetTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-9s %-6s %-9s %-37s %s\n", "preset", "batch", "gpu-step", "sample file", "bound by")
	for _, p := range Presets() {
		fmt.Fprintf(&b, "  %-9s %-6d %-9s %-37s %s\n", p.Name, p.Batch, p.GPUStep, p.Sample+" ("+p.Ext+")", p.BoundBy)
		fmt.Fprintf(&b, "  %-9s per sample: %s\n", "", p.Work)
	}
	return b.String()
}
