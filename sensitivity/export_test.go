package sensitivity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gridProfile is a fully measured 3×4 grid of an audio-like job (no fit
// involved, so the exports' goldens depend on the exports only).
func gridProfile() *Profile {
	p := &Profile{
		SchemaVersion: SchemaVersion, ToolVersion: "test",
		CreatedAt: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Job:       JobInfo{Name: "audio", Command: []string{"bin/synthtrain", "--preset", "audio"}, Runner: "local", Batch: 16, GPUs: 1, MaxIterations: 200},
		Host:      HostInfo{CPUModel: "test", LogicalCPUs: 2, DRAMBytes: 8 << 30, CgroupMode: "v2", DatasetBytes: 256 * mib, DatasetFiles: 175, ReadLimitBytesPS: 40e6},
		GPU:       GPUInfo{Mode: GPUModeEmulated},
		Strategy:  "grid",
		Axes:      Axes{CPUs: []float64{0.5, 1, 2}, MemLimitBytes: []int64{64 * mib, 128 * mib, 384 * mib, 0}},
	}
	vals := [3][4]float64{
		{27, 31, 300, 300},
		{27, 32, 380, 390},
		{27, 32, 385, 392},
	}
	for i, c := range p.Axes.CPUs {
		for j, m := range p.Axes.MemLimitBytes {
			p.Cells = append(p.Cells, Cell{CPUs: c, MemLimitBytes: m, Measured: true, Phase: PhaseGrid, SamplesPerS: vals[i][j], SamplesPerSCI95: 1})
		}
	}
	return p
}

// smallServer: 2 CPUs, 1 GB, 1 GPU: fair share 2 CPUs and 1 GB per GPU;
// the grid's rows are Synergy's × 2/3 and its columns × 1/62.5.
var smallServer = ServerShape{CPUs: 2, MemBytes: 1e9, GPUs: 1}

func TestExport_Golden(t *testing.T) {
	for _, format := range ExportFormats() {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Export(&buf, gridProfile(), format, ExportOptions{Server: smallServer}); err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, "export_"+format+".golden", buf.Bytes())
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s export changed; if intended run go test -update\n got: %s", format, buf.String())
			}
		})
	}
}

func TestSynergyGrid_ScalesNormalisesAndClamps(t *testing.T) {
	g, err := ExportSynergyGrid(gridProfile(), smallServer)
	if err != nil {
		t.Fatal(err)
	}
	// rows: 1,2,3,...,24 × 2/3 → 0.667 ... 16; columns 20.83 GB × 1/62.5 = 0.333 GB ... 4 GB
	if math.Abs(g.CPUsPerGPU[2]-2) > 1e-12 || math.Abs(g.MemBytesPerGPU[1]-1e9) > 1 {
		t.Errorf("fair share row/column at %v CPUs, %v bytes; want 2 and 1e9", g.CPUsPerGPU[2], g.MemBytesPerGPU[1])
	}
	if g.Table[2][1] != 1 || g.FairClamped {
		t.Errorf("table at the fair share = %v (clamped %v), want 1", g.Table[2][1], g.FairClamped)
	}
	// fair share (2 CPUs, 1e9 B): between 384 MiB (385) and 8 GiB (392):
	// 385 + 7·(1e9 − 402653184)/(8589934592 − 402653184) = 385.5106
	if math.Abs(g.FairSamplesPerS-385.5106) > 1e-3 {
		t.Errorf("fair share samples/s = %v, want 385.5106", g.FairSamplesPerS)
	}
	// Rows above 2 CPUs (rows 3..8) lie outside the profile: clamped, and
	// equal to the 2-CPU row; row 0 (0.667 CPUs) and every column are inside.
	for i := range g.Table {
		for j := range g.Table[i] {
			want := i >= 3
			if g.Clamped[i][j] != want {
				t.Errorf("clamped[%d][%d] = %v, want %v", i, j, g.Clamped[i][j], want)
			}
			if want && g.Table[i][j] != g.Table[2][j] {
				t.Errorf("clamped cell [%d][%d] = %v, want the edge's %v (never extrapolated)", i, j, g.Table[i][j], g.Table[2][j])
			}
		}
	}
	if g.ClampedCells != 30 {
		t.Errorf("clamped cells = %d, want 6 rows × 5 = 30", g.ClampedCells)
	}
	// Default server: every column (20.83 GB and up) lies above the 8 GiB
	// host of a 2-core profile, so all 45 cells are clamped.
	d, err := ExportSynergyGrid(gridProfile(), DefaultServer())
	if err != nil {
		t.Fatal(err)
	}
	if d.CPUsPerGPU != SynergyGridCPUs() || d.MemBytesPerGPU[0] != 20.83e9 || d.ClampedCells != 45 || !d.FairClamped {
		t.Errorf("default server: axes %v %v, clamped %d (fair %v); want Synergy's axes, all 45 clamped", d.CPUsPerGPU, d.MemBytesPerGPU, d.ClampedCells, d.FairClamped)
	}
}

func TestGavel_RoundTrip(t *testing.T) {
	p := gridProfile()
	g, err := ExportGavel(p, smallServer, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	encodeJSON(&buf, g)
	var back Gavel
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	byType := back["emulated"]
	if len(back) != 1 || len(byType) != 1 {
		t.Fatalf("gavel = %v, want one GPU type (emulated) with one job", back)
	}
	for key, v := range byType {
		jt, scale, err := parseGavelKey(key)
		if err != nil {
			t.Fatal(err)
		}
		// 385.5106 samples/s at the fair share / (16 × 1) = 24.0944 steps/s
		if jt != "audio (batch size 16)" || scale != 1 || math.Abs(v["null"]-24.0944) > 1e-4 {
			t.Errorf("gavel entry %q (%q, %d) = %v, want audio (batch size 16), 1, 24.0944", key, jt, scale, v)
		}
	}
	for _, bad := range []string{"audio, 1", "('audio', x)", "('audio')"} {
		if _, _, err := parseGavelKey(bad); err == nil {
			t.Errorf("parseGavelKey(%q) accepted", bad)
		}
	}
}

func TestExportFile_RefusesMalformedProfiles(t *testing.T) {
	var good bytes.Buffer
	if err := gridProfile().Encode(&good); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in, field string }{
		{"not JSON", "{", "not JSON"},
		{"no version", `{"job": {}}`, "schema_version"},
		{"bad gpu mode", strings.Replace(good.String(), `"mode": "emulated"`, `"mode": "tpu"`, 1), "gpu.mode"},
		{"negative throughput", strings.Replace(good.String(), `"samples_per_s": 27,`, `"samples_per_s": -27,`, 1), "cells[0]"},
		{"unknown field", strings.Replace(good.String(), `"strategy"`, `"stratagem": "x", "strategy"`, 1), "stratagem"},
		{"descending axis", strings.Replace(good.String(), "0.5,\n      1,", "1.5,\n      1,", 1), "axes.cpus[1]"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == good.String() {
				t.Fatal("test input not modified")
			}
			path := filepath.Join(dir, "p.json")
			os.WriteFile(path, []byte(tt.in), 0o644)
			for _, f := range ExportFormats() {
				var out bytes.Buffer
				err := exportFile(&out, path, f, ExportOptions{Server: smallServer})
				if err == nil || !strings.Contains(err.Error(), tt.field) || out.Len() != 0 {
					t.Errorf("%s: err = %v (wrote %d bytes), want one naming %q and no output", f, err, out.Len(), tt.field)
				}
			}
		})
	}
	// A profile with holes is filled before export.
	p := gridProfile()
	var kept []Cell
	for _, c := range p.Cells {
		if c.CPUs != 1 || c.MemLimitBytes == 0 {
			kept = append(kept, c)
		}
	}
	p.Cells = kept
	path := filepath.Join(dir, "holes.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := exportFile(&out, path, FormatSlurm, ExportOptions{}); err != nil {
		t.Errorf("profile with predicted-later holes: %v", err)
	}
	if err := exportFile(&out, path, "csv", ExportOptions{}); err == nil || !strings.Contains(err.Error(), "synergy-grid") {
		t.Errorf("unknown format: err = %v, want one listing the formats", err)
	}
}

var gavelKeyRE = regexp.MustCompile(`^\('(.*)', (\d+)\)$`)

// parseGavelKey splits a Gavel throughputs key.
func parseGavelKey(key string) (jobType string, scale int, err error) {
	m := gavelKeyRE.FindStringSubmatch(key)
	if m == nil {
		return "", 0, fmt.Errorf("gavel key %q: want ('<job type>', <scale factor>)", key)
	}
	scale, err = strconv.Atoi(m[2])
	if err != nil {
		return "", 0, fmt.Errorf("gavel key %q: scale factor: %w", key, err)
	}
	return m[1], scale, nil
}

// exportFile loads the profile at path (strictly: a malformed profile is
// refused with the field named), fills its grid when cells are missing,
// and writes it in format to w.
func exportFile(w io.Writer, path, format string, opt ExportOptions) error {
	p, err := LoadFilled(path)
	if err != nil {
		return err
	}
	if err := Export(w, p, format, opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
