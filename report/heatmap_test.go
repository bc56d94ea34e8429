package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

const mib = 1 << 20

// profile is a 2×3 grid: three measured cells, two predicted, one OOM.
func profile() *sensitivity.Profile {
	return &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion,
		CreatedAt:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Job:           sensitivity.JobInfo{Name: "audio", Batch: 16, GPUs: 1},
		Host:          sensitivity.HostInfo{DRAMBytes: 8 << 30},
		GPU:           sensitivity.GPUInfo{Mode: sensitivity.GPUModeEmulated},
		Axes:          sensitivity.Axes{CPUs: []float64{0.5, 2}, MemLimitBytes: []int64{64 * mib, 384 * mib, 0}},
		Cells: []sensitivity.Cell{
			{CPUs: 0.5, MemLimitBytes: 64 * mib, Measured: true, Failure: &sensitivity.Failure{Class: sensitivity.FailOOMKilled}},
			{CPUs: 0.5, MemLimitBytes: 384 * mib, SamplesPerS: 151.25},
			{CPUs: 0.5, MemLimitBytes: 0, Measured: true, SamplesPerS: 152.5},
			{CPUs: 2, MemLimitBytes: 64 * mib, SamplesPerS: 27.04},
			{CPUs: 2, MemLimitBytes: 384 * mib, Measured: true, SamplesPerS: 381},
			{CPUs: 2, MemLimitBytes: 0, Measured: true, SamplesPerS: 390},
		},
	}
}

func TestHeatmap_PNG(t *testing.T) {
	var buf bytes.Buffer
	if err := Heatmap(&buf, FormatPNG, profile(), ""); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("PNG is %v, want a readable figure", b)
	}
}

func TestHeatmap_SVGLabelsMarksAndDeterminism(t *testing.T) {
	var a, b bytes.Buffer
	if err := Heatmap(&a, FormatSVG, profile(), "t"); err != nil {
		t.Fatal(err)
	}
	if err := Heatmap(&b, FormatSVG, profile(), "t"); err != nil {
		t.Fatal(err)
	}
	s := a.String()
	if !strings.Contains(s, "<svg") {
		t.Fatal("not an SVG")
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same profile drew different SVG bytes")
	}
	// labels: measured as values, predicted with ~, the failure by class,
	// the axes in their units
	for _, want := range []string{">152<", ">~151<", ">~27.0<", ">381<", ">oom killed<", ">unlimited<", ">64MiB<", ">384MiB<", ">0.5<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// a ring per measured cell (4 of 6): the scatter draws one circle path
	// each; predicted cells have none
	noMarks := profile()
	for i := range noMarks.Cells {
		if noMarks.Cells[i].Failure == nil {
			noMarks.Cells[i].Measured = false
		}
	}
	var c bytes.Buffer
	if err := Heatmap(&c, FormatSVG, noMarks, "t"); err != nil {
		t.Fatal(err)
	}
	if ringsA, ringsC := strings.Count(s, "<path"), strings.Count(c.String(), "<path"); ringsA-ringsC != 3 {
		t.Errorf("paths with 4 measured cells %d, with 1 (the OOM) %d: want 3 more rings", ringsA, ringsC)
	}
}

func TestSaveHeatmap_ByExtension(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"h.png", "h.SVG"} {
		path := filepath.Join(dir, name)
		if err := SaveHeatmap(path, profile(), ""); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := SaveHeatmap(filepath.Join(dir, "h.pdf"), profile(), ""); err == nil || !strings.Contains(err.Error(), ".png or .svg") {
		t.Errorf("pdf: err = %v, want one naming the formats", err)
	}
	empty := profile()
	empty.Axes.CPUs = nil
	if err := Heatmap(&bytes.Buffer{}, FormatSVG, empty, ""); err == nil {
		t.Error("empty axes drew a figure")
	}
}
