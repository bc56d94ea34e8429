package sensitivity

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleProfile is a small but complete profile: a 2×2 grid with one
// predicted cell and one failure.
func sampleProfile() *Profile {
	return &Profile{
		SchemaVersion: SchemaVersion,
		ToolVersion:   "test",
		CreatedAt:     time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Job:           JobInfo{Name: "synthtrain", Command: []string{"bin/synthtrain", "--preset", "image"}, Runner: "local", Batch: 32, GPUs: 1, MaxIterations: 200, DataDir: "/data"},
		Host:          HostInfo{CPUModel: "AMD EPYC", LogicalCPUs: 2, DRAMBytes: 24 << 30, CgroupMode: "hybrid", DatasetBytes: 256 << 20, DatasetFiles: 800, ColdReadMBPerS: 1400},
		GPU:           GPUInfo{Mode: GPUModeEmulated, Note: "timed wait"},
		Strategy:      "sweep",
		Axes:          Axes{CPUs: []float64{1, 2}, MemLimitBytes: []int64{128 << 20, 0}},
		Cells: []Cell{
			{CPUs: 1, MemLimitBytes: 128 << 20, SamplesPerS: 90, SamplesPerSCI95: 2},
			{CPUs: 1, MemLimitBytes: 0, Measured: true, Phase: PhaseCPU, SamplesPerS: 100, SamplesPerSCI95: 1.5,
				Stats: &PointStats{Workers: 1, Iterations: 60, WarmupIterations: 6, MetricsSource: MetricsStream, Converged: true, StopReason: "converged", IterSecondsP50: 0.32, IterSecondsP95: 0.35, DataWaitFraction: 0.8}},
			{CPUs: 2, MemLimitBytes: 128 << 20, Measured: true, Phase: PhaseMemory, Failure: &Failure{Class: FailOOMKilled, ExitCode: -1, Message: "OOM-killed"}},
			{CPUs: 2, MemLimitBytes: 0, Measured: true, Phase: PhaseCPU, SamplesPerS: 190, SamplesPerSCI95: 3},
		},
		Cost: Cost{Points: 3, WallSeconds: 42.5},
	}
}

func TestProfile_Golden(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleProfile().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	want := readGolden(t, "profile_v1.golden.json", buf.Bytes())
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("profile JSON changed; if intended, bump SchemaVersion when incompatible, update docs/profile-format.md and run go test -update\n got: %s", buf.String())
	}
	// and it reads back to the same thing
	p, err := Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	p.Encode(&again)
	if !bytes.Equal(again.Bytes(), want) {
		t.Error("decode/encode round trip differs")
	}
}

func TestDecode_Rejects(t *testing.T) {
	var buf bytes.Buffer
	sampleProfile().Encode(&buf)
	good := buf.String()
	for _, tc := range []struct{ name, in, want string }{
		{"future version", strings.Replace(good, `"schema_version": 1`, `"schema_version": 2`, 1), "newer than this tool reads"},
		{"no version", strings.Replace(good, `"schema_version": 1,`, ``, 1), "schema_version: is missing"},
		{"unknown field", strings.Replace(good, `"strategy"`, `"stratgy"`, 1), `unknown field "stratgy"`},
		{"bad gpu mode", strings.Replace(good, `"mode": "emulated"`, `"mode": "cuda"`, 1), "gpu.mode"},
		{"negative samples", strings.Replace(good, `"samples_per_s": 190`, `"samples_per_s": -190`, 1), "cells[3].samples_per_s: -190 is negative (the cell at cpus=2 mem_limit_bytes=0)"},
		{"axes out of order", strings.Replace(good, "\"cpus\": [\n      1,\n      2\n    ]", "\"cpus\": [\n      2,\n      1\n    ]", 1), "axes.cpus[1]"},
		{"not json", "{", "not JSON"},
		{"trailing", good + "{}", "after top-level value"},
	} {
		rejects(t, tc.name, good, tc.in, tc.want, func(r io.Reader) error { _, err := Decode(r); return err })
	}
}

// rejects runs a subtest that decodes in, a mutation of good, and wants an
// error containing want.
func rejects(t *testing.T, name, good, in, want string, decode func(io.Reader) error) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if in == good {
			t.Fatal("test case did not change the input")
		}
		if err := decode(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
}

func TestSave_AtomicAndLoadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	p := sampleProfile()
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	p.Cost.Points = 4
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Cost.Points != 4 {
		t.Errorf("points = %d, want 4", back.Cost.Points)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the profile (no temp files left)", len(ents))
	}
}

func TestMatrix_AtInterpolatesAndClamps(t *testing.T) {
	m := Matrix{
		CPUs:     []float64{1, 3},
		MemBytes: []float64{10, 20},
		Values:   [][]float64{{10, 20}, {30, 60}},
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c, b, want float64
		in         bool
	}{
		{1, 10, 10, true},
		{2, 10, 20, true},    // halfway 10..30
		{1, 15, 15, true},    // halfway 10..20
		{2, 15, 30, true},    // (15 + 45) / 2
		{3, 20, 60, true},    // corner
		{5, 20, 60, false},   // clamped above, flagged
		{0.5, 10, 10, false}, // clamped below, flagged
	} {
		got, in := m.At(tc.c, tc.b)
		if math.Abs(got-tc.want) > 1e-12 || in != tc.in {
			t.Errorf("At(%v, %v) = %v, %v; want %v, %v", tc.c, tc.b, got, in, tc.want, tc.in)
		}
	}
	if c, b := m.Smallest(0.95); c != 3 || b != 20 {
		t.Errorf("Smallest(0.95) = %v, %v; want 3, 20 (only the corner reaches 57)", c, b)
	}
	n, err := m.Normalized(1, 20)
	if err != nil || n.Values[1][1] != 3 || n.Unit != UnitNormalized {
		t.Errorf("Normalized: %v %v", n, err)
	}
}

func TestProfileMatrix_UnlimitedAtDRAM(t *testing.T) {
	p := sampleProfile()
	m, err := p.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	if m.MemBytes[1] != float64(24<<30) {
		t.Errorf("unlimited column at %v, want the host's DRAM", m.MemBytes[1])
	}
	if m.Values[1][0] != 0 || m.Measured[1][0] != true {
		t.Errorf("an OOM cell reads as 0 throughput, measured; got %v %v", m.Values[1][0], m.Measured[1][0])
	}
	if m.Measured[0][0] {
		t.Error("a predicted cell must not read as measured")
	}
}

func TestFill_BottleneckAtACrossCell(t *testing.T) {
	p := sampleProfile()
	// replace the OOM with a measured fetch-bound figure
	p.Cells[2] = Cell{CPUs: 2, MemLimitBytes: 128 << 20, Measured: true, Phase: PhaseMemory, SamplesPerS: 95, SamplesPerSCI95: 4}
	p.Cells = append(p.Cells[:0], p.Cells[1:]...) // drop the predicted cell
	if err := Fill(p); err != nil {
		t.Fatal(err)
	}
	c := p.Cell(1, 128<<20)
	// 95 at (2, 128MiB) is below P(2) = 190: fetch-bound, so F(128MiB) = 95
	// (the slowest fetch-bound rate sets F0 below 1400 MB/s / 335544 B =
	// 4172/s); min(P(1) = 100, F = 95) = 95, and as 100 − 1.5 <= 95 + 4 the
	// two terms overlap: the interval is the larger, 4.
	if c == nil || c.Measured || math.Abs(c.SamplesPerS-95) > 1e-9 || math.Abs(c.SamplesPerSCI95-4) > 1e-9 {
		t.Fatalf("predicted cell = %+v, want 95 ± 4, not measured", c)
	}
	if len(p.Cells) != 4 || p.Fit == nil || p.Fit.Model != ModelMinGPUCPUFetch {
		t.Errorf("cells = %d, fit = %+v", len(p.Cells), p.Fit)
	}
}
