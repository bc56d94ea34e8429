package synthtrain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runMain runs the command line in-process with a private environment.
func runMain(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

// readMetrics parses every line of a metrics file, failing on any that is
// not a complete, well-formed contract line.
func readMetrics(t *testing.T, path string) []Iteration {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("metrics file does not end in a newline: partial last line")
	}
	var its []Iteration
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %s", len(its)+1, sc.Bytes())
		}
		it, err := ParseIteration(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", len(its)+1, err)
		}
		its = append(its, it)
	}
	return its
}

func TestMain_TrainWritesTheMetricsStream(t *testing.T) {
	// About 9 images of ~100 KiB, batch 4: an epoch is batches of 4, 4 and
	// a short one.
	data := filepath.Join(t.TempDir(), "data")
	generate(t, GenConfig{Dir: data, Preset: mustPreset(t, "image"), Bytes: 900 << 10, Seed: 3, Classes: 2, Workers: 2})
	ds, err := ScanDataset(data, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	files := len(ds.Files)
	const batch, iters = 4, 9
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	env := map[string]string{EnvMetricsFile: metrics, EnvPoint: "cpus=1 mem=1GiB"}
	args := []string{"train", "--data", "/elsewhere", "--max-iterations", "100", "-j", "2", "--gpu-step", "2ms",
		"--batch", "7", "--data", data, "-b", "4", "--max_iterations", "9"}
	code, _, stderr := runMain(t, env, args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "cpus=1 mem=1GiB") || !strings.Contains(stderr, "9 iterations") {
		t.Errorf("stderr lacks the point label or the summary:\n%s", stderr)
	}
	its := readMetrics(t, metrics)
	if len(its) != iters {
		t.Fatalf("%d metrics lines, want %d", len(its), iters)
	}
	perEpoch := map[int]int{}
	for i, it := range its {
		if it.Iter != i {
			t.Errorf("line %d: iter %d", i, it.Iter)
		}
		if i > 0 && it.TS <= its[i-1].TS {
			t.Errorf("line %d: ts %.6f not after %.6f", i, it.TS, its[i-1].TS)
		}
		if i > 0 && it.Epoch < its[i-1].Epoch {
			t.Errorf("line %d: epoch went back from %d to %d", i, its[i-1].Epoch, it.Epoch)
		}
		if !it.Emulated || it.StepIntendedS != 0.002 {
			t.Errorf("line %d: emulated %v step_intended_s %v, want true 0.002", i, it.Emulated, it.StepIntendedS)
		}
		// A timer never fires early: the measured wait is at least the asked one.
		if it.StepS < it.StepIntendedS || it.DataWaitS < 0 {
			t.Errorf("line %d: step_s %v < step_intended_s %v, or data_wait_s %v < 0", i, it.StepS, it.StepIntendedS, it.DataWaitS)
		}
		perEpoch[it.Epoch] += it.Samples
		if it.Samples != batch && (i+1 < len(its) && its[i+1].Epoch == it.Epoch) {
			t.Errorf("line %d: %d samples mid-epoch, want %d", i, it.Samples, batch)
		}
	}
	// ceil(files/4) batches per epoch, so 9 iterations span more than one
	// epoch whenever files <= 32.
	full := (files + batch - 1) / batch
	if iters <= full {
		t.Fatalf("dataset of %d files too large for this test", files)
	}
	if its[full].Epoch != 1 || its[full-1].Epoch != 0 {
		t.Errorf("epoch should advance at iteration %d (after %d files): got epochs %d, %d", full, files, its[full-1].Epoch, its[full].Epoch)
	}
	if perEpoch[0] != files {
		t.Errorf("epoch 0 had %d samples, want every file once: %d", perEpoch[0], files)
	}

	// A second run appends rather than truncating.
	if code, _, stderr := runMain(t, env, "--data", data, "-b", "4", "-j", "1", "--gpu-step", "1ms", "--max-iterations", "2"); code != 0 {
		t.Fatalf("second run exit %d:\n%s", code, stderr)
	}
	if n := len(readMetrics(t, metrics)); n != iters+2 {
		t.Errorf("after a second run of 2: %d lines, want %d", n, iters+2)
	}
}

func TestMain_SyntheticDataReadsNoFiles(t *testing.T) {
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	for _, preset := range []string{"image", "audio", "language"} {
		code, _, stderr := runMain(t, map[string]string{EnvMetricsFile: metrics},
			"--synthetic-data", "--data", missing, "--preset", preset, "--gpu-step", "1ms", "--max-iterations", "3")
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", preset, code, stderr)
		}
	}
	its := readMetrics(t, metrics)
	if len(its) != 9 {
		t.Fatalf("%d lines, want 3 runs × 3", len(its))
	}
	wantBatch := []int{32, 16, 64}
	for i, it := range its {
		if it.Samples != wantBatch[i/3] || it.Iter != i%3 || it.Epoch != 0 {
			t.Errorf("line %d: %+v, want samples %d iter %d epoch 0", i, it, wantBatch[i/3], i%3)
		}
	}
}

func TestMain_ExitStatus(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"help", []string{"--help"}, nil, 0, "presets", ""},
		{"help command", []string{"help"}, nil, 0, "usage:", ""},
		{"gen help", []string{"gen", "-h"}, nil, 0, "gen flags", ""},
		{"unknown flag", []string{"--data", dir, "--frobnicate"}, nil, 2, "", "frobnicate"},
		{"no data", []string{"-b", "3"}, nil, 2, "", "--data"},
		{"bad gen size", []string{"gen", "--dir", dir, "--bytes", "lots"}, nil, 2, "", "--bytes"},
		{"empty dataset", []string{"--data", dir, "--max-iterations", "1"}, nil, 1, "", "no .jpg files"},
		{"unwritable metrics", []string{"--synthetic-data", "--max-iterations", "1"},
			map[string]string{EnvMetricsFile: filepath.Join(dir, "no", "such", "m.jsonl")}, 1, "", EnvMetricsFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runMain(t, tt.env, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, want %d; stdout %q (want %q); stderr %q (want %q)", code, tt.wantCode, out, tt.wantOut, errs, tt.wantErr)
			}
		})
	}
}

func TestMain_GenPrintsWhatItMade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lang")
	code, out, errs := runMain(t, nil, "gen", "--dir", dir, "--bytes", "40KiB", "--preset", "language", "--classes", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ds, err := ScanDataset(dir, ".tok")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, dir) || !strings.Contains(out, "in 3 classes") {
		t.Errorf("stdout %q, want the directory and 3 classes", out)
	}
	if want := "made " + strconv.Itoa(len(ds.Files)) + " language files"; !strings.HasPrefix(out, want) {
		t.Errorf("stdout %q, want it to start %q", out, want)
	}
	code, out, _ = runMain(t, nil, "gen", "--dir", dir, "--bytes", "40KiB", "--preset", "language", "--classes", "3")
	if code != 0 || !strings.HasPrefix(out, "already there:") {
		t.Errorf("second gen: exit %d, stdout %q, want 0 and 'already there:'", code, out)
	}
}

func TestIteration_RoundTrip(t *testing.T) {
	in := Iteration{Iter: 12, Samples: 32, DataWaitS: 0.0123, StepS: 0.05, TS: 1732300000.123456, Epoch: 1, StepIntendedS: 0.05, Emulated: true}
	line := in.appendJSON(nil)
	want := `{"iter":12,"samples":32,"data_wait_s":0.012300,"step_s":0.050000,"ts":1732300000.123456,"epoch":1,"step_intended_s":0.050000,"emulated":true}` + "\n"
	if string(line) != want {
		t.Errorf("line\n got %s\nwant %s", line, want)
	}
	out, err := ParseIteration(line)
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	if _, err := ParseIteration([]byte(`{"iter":1,"samples":2,"data_wait_s":0,"step_s":0}`)); err == nil || !strings.Contains(err.Error(), `"ts"`) {
		t.Errorf("missing ts: %v", err)
	}
	nan := Iteration{StepS: math.NaN()}.appendJSON(nil)
	if !json.Valid(bytes.TrimSpace(nan)) {
		t.Errorf("NaN rendered as invalid JSON: %s", nan)
	}
}

// FuzzIteration_RoundTrip: every line the loop can write parses back to the
// same iteration, to the 1 µs the stream carries.
func FuzzIteration_RoundTrip(f *testing.F) {
	f.Add(0, 32, 0.0123, 0.05, 1732300000.123456, 0, 0.05, true)
	f.Add(1<<40, 0, 0.0, 1e-9, 0.0, 7, 0.0, false)
	f.Add(-1, -5, 1e300, math.Inf(1), math.NaN(), -2, -0.5, true)
	f.Fuzz(func(t *testing.T, iter, samples int, wait, step, ts float64, epoch int, intended float64, emulated bool) {
		in := Iteration{Iter: iter, Samples: samples, DataWaitS: wait, StepS: step, TS: ts, Epoch: epoch, StepIntendedS: intended, Emulated: emulated}
		line := in.appendJSON(nil)
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not exactly one line: %q", line)
		}
		out, err := ParseIteration(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if out.Iter != iter || out.Samples != samples || out.Epoch != epoch || out.Emulated != emulated {
			t.Errorf("ints/bool: %+v from %+v", out, in)
		}
		for _, p := range [][2]float64{{wait, out.DataWaitS}, {step, out.StepS}, {ts, out.TS}, {intended, out.StepIntendedS}} {
			want := p[0]
			if math.IsNaN(want) || math.IsInf(want, 0) {
				want = 0
			}
			if d := math.Abs(p[1] - want); d > 5.0001e-7 && d > 1e-12*math.Abs(want) {
				t.Errorf("float %v came back as %v", p[0], p[1])
			}
		}
	})
}
