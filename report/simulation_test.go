package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

func sweep() []simcore.Run {
	run := func(strategy string, seed uint64, jcts ...float64) simcore.Run {
		res := &simcore.Result{}
		for i, h := range jcts {
			res.Jobs = append(res.Jobs, simcore.Finished(i, 100, -1, 100+h*3600))
		}
		return simcore.Run{Point: simcore.Point{Strategy: strategy, Policy: "fifo", JobsPerHour: 9, Seed: seed}, Result: res}
	}
	return []simcore.Run{
		run("fair", 1, 2, 10, 40, 300),
		run("tune", 1, 1, 5, 20, 100),
		run("tune", 2, 0.5, 4, 30),
	}
}

func TestSeriesFromRuns_Labels(t *testing.T) {
	s := SeriesFromRuns(sweep())
	var labels []string
	for _, x := range s {
		labels = append(labels, x.Label)
	}
	// seeds vary, loads do not
	want := []string{"fair+fifo seed 1", "tune+fifo seed 1", "tune+fifo seed 2"}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if !reflect.DeepEqual(s[1].JCTHours, []float64{1, 5, 20, 100}) {
		t.Errorf("JCTs %v", s[1].JCTHours)
	}
}

func TestCDF_Steps(t *testing.T) {
	cases := []struct {
		name string
		in   []float64
		logX bool
		want plotter.XYs
	}{
		// sorted 1, 2, 3: each value rises by 1/3
		{"linear", []float64{3, 1, 2}, false, plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 1.0 / 3}, {X: 2, Y: 1.0 / 3}, {X: 2, Y: 2.0 / 3}, {X: 3, Y: 2.0 / 3}, {X: 3, Y: 1}}},
		// log axis drops 0 and negatives: 2 values left, steps of 1/2
		{"log drops non-positive", []float64{0, 4, -1, 2}, true, plotter.XYs{{X: 2, Y: 0}, {X: 2, Y: 0.5}, {X: 4, Y: 0.5}, {X: 4, Y: 1}}},
		{"empty", nil, true, plotter.XYs{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := cdf(c.in, c.logX); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestJCTCDF_PNGAndSVG(t *testing.T) {
	series := SeriesFromRuns(sweep())
	var pngBuf bytes.Buffer
	if err := JCTCDF(&pngBuf, "png", series, SimOptions{}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngBuf.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	// 16 × 10 cm at vg's default 96 dpi: 16/2.54·96 = 604.7 → 605 × 378 px
	if b := img.Bounds(); b.Dx() != 605 || b.Dy() != 378 {
		t.Errorf("PNG is %v, want 605×378", b)
	}
	svg := func(opt SimOptions) []byte {
		var b bytes.Buffer
		if err := JCTCDF(&b, "svg", series, opt); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := svg(SimOptions{Title: "anchor"}), svg(SimOptions{Title: "anchor"})
	if !bytes.HasPrefix(a, []byte("<?xml")) || !bytes.Contains(a, []byte("<svg")) {
		t.Errorf("not an SVG: %.60q", a)
	}
	if !bytes.Equal(a, b) {
		t.Error("SVG differs between two renders of the same series")
	}
	for _, want := range []string{"anchor", "tune+fifo seed 2", "JCT (hours)"} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if lin := svg(SimOptions{Title: "anchor", LinearX: true}); bytes.Equal(lin, a) {
		t.Error("linear and log axes drew the same picture")
	}
}

func TestJCTCDF_Errors(t *testing.T) {
	var b bytes.Buffer
	if err := JCTCDF(&b, "png", nil, SimOptions{}); err == nil {
		t.Error("no series: no error")
	}
	if err := JCTCDF(&b, "png", []JCTSeries{{Label: "x"}}, SimOptions{}); err == nil || !strings.Contains(err.Error(), "no finished jobs") {
		t.Errorf("empty series: %v", err)
	}
	if err := JCTCDF(&b, "bmp", SeriesFromRuns(sweep()), SimOptions{}); err == nil || !strings.Contains(err.Error(), `"bmp"`) {
		t.Errorf("bad format: %v", err)
	}
}

func TestSave_ByExtension(t *testing.T) {
	dir := t.TempDir()
	pts := []simcore.UtilPoint{{StartS: 0, EndS: 3600, GPUPct: 50, CPUPct: 40, MemPct: 20}, {StartS: 3600, EndS: 7200, GPUPct: 100, CPUPct: 90, MemPct: 60}}
	header := map[string][]byte{"png": []byte("\x89PNG\r\n\x1a\n"), "svg": []byte("<?xml"), "pdf": []byte("%PDF")}
	for ext, magic := range header {
		for _, kind := range []string{"cdf", "util"} {
			path := filepath.Join(dir, kind+"."+ext)
			var err error
			if kind == "cdf" {
				err = SaveJCTCDF(path, SeriesFromRuns(sweep()), SimOptions{})
			} else {
				run := sweep()[0]
				run.Result.SharesHourly = pts
				_, err = SaveAllocations(path, []simcore.Run{run}, SimOptions{})
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) < 500 || !bytes.HasPrefix(data, magic) {
				t.Errorf("%s: %d bytes starting %.8q", path, len(data), data)
			}
		}
	}
	for _, bad := range []string{"out", "out.bmp"} {
		err := SaveJCTCDF(filepath.Join(dir, bad), SeriesFromRuns(sweep()), SimOptions{})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v", bad, err)
		}
		if _, serr := os.Stat(filepath.Join(dir, bad)); serr == nil {
			t.Errorf("%s: file left behind", bad)
		}
	}
}

func TestSaveAllocations_OneFilePerRun(t *testing.T) {
	dir := t.TempDir()
	runs := sweep()
	for i := range runs {
		pct := float64(10 * (i + 1))
		runs[i].Result.SharesHourly = []simcore.UtilPoint{{StartS: 0, EndS: 3600, GPUPct: pct, CPUPct: pct / 2, MemPct: pct / 4}}
	}
	paths, err := SaveAllocations(filepath.Join(dir, "alloc.svg"), runs, SimOptions{Title: "anchor"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alloc-fair-fifo-seed1.svg", "alloc-tune-fifo-seed1.svg", "alloc-tune-fifo-seed2.svg"}
	var drawn [][]byte
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("path %d: %s, want %s", i, p, want[i])
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if label := SeriesFromRuns(runs)[i].Label; !bytes.Contains(data, []byte(label)) {
			t.Errorf("%s does not name its run %q", p, label)
		}
		drawn = append(drawn, data)
	}
	if len(paths) != 3 || bytes.Equal(drawn[0], drawn[1]) {
		t.Errorf("%d files; the first two runs drew the same picture: %v", len(paths), len(paths) == 3 && bytes.Equal(drawn[0], drawn[1]))
	}
	if one := allocationPaths("a.png", runs[:1]); !reflect.DeepEqual(one, []string{"a.png"}) {
		t.Errorf("a single run: %v", one)
	}

	runs[2].Result.SharesHourly = nil
	path := filepath.Join(dir, "missing.png")
	if _, err := SaveAllocations(path, runs, SimOptions{}); err == nil || !strings.Contains(err.Error(), "tune+fifo seed 2") {
		t.Errorf("a run without hourly shares: %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "missing*")); len(matches) != 0 {
		t.Errorf("files written for a refused sweep: %v", matches)
	}
}
