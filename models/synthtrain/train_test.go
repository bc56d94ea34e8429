package synthtrain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/jobcontract"
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
func readMetrics(t *testing.T, path string) []jobcontract.Iteration {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("metrics file does not end in a newline: partial last line")
	}
	var its []jobcontract.Iteration
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %s", len(its)+1, sc.Bytes())
		}
		it, err := jobcontract.ParseIteration(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", len(its)+1, err)
		}
		if it.Epoch == nil || it.StepIntendedS == nil {
			t.Fatalf("line %d: no epoch or step_intended_s: %s", len(its)+1, sc.Bytes())
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
	env := map[string]string{jobcontract.EnvMetricsFile: metrics, jobcontract.EnvPoint: "cpus=1 mem=1GiB"}
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
		if i > 0 && *it.Epoch < *its[i-1].Epoch {
			t.Errorf("line %d: epoch went back from %d to %d", i, *its[i-1].Epoch, *it.Epoch)
		}
		if !it.Emulated || *it.StepIntendedS != 0.002 {
			t.Errorf("line %d: emulated %v step_intended_s %v, want true 0.002", i, it.Emulated, *it.StepIntendedS)
		}
		// A timer never fires early: the measured wait is at least the asked one.
		if it.StepS < *it.StepIntendedS || it.DataWaitS < 0 {
			t.Errorf("line %d: step_s %v < step_intended_s %v, or data_wait_s %v < 0", i, it.StepS, *it.StepIntendedS, it.DataWaitS)
		}
		perEpoch[*it.Epoch] += it.Samples
		if it.Samples != batch && (i+1 < len(its) && *its[i+1].Epoch == *it.Epoch) {
			t.Errorf("line %d: %d samples mid-epoch, want %d", i, it.Samples, batch)
		}
	}
	// ceil(files/4) batches per epoch, so 9 iterations span more than one
	// epoch whenever files <= 32.
	full := (files + batch - 1) / batch
	if iters <= full {
		t.Fatalf("dataset of %d files too large for this test", files)
	}
	if *its[full].Epoch != 1 || *its[full-1].Epoch != 0 {
		t.Errorf("epoch should advance at iteration %d (after %d files): got epochs %d, %d", full, files, *its[full-1].Epoch, *its[full].Epoch)
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
		code, _, stderr := runMain(t, map[string]string{jobcontract.EnvMetricsFile: metrics},
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
		if it.Samples != wantBatch[i/3] || it.Iter != i%3 || *it.Epoch != 0 {
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
			map[string]string{jobcontract.EnvMetricsFile: filepath.Join(dir, "no", "such", "m.jsonl")}, 1, "", jobcontract.EnvMetricsFile},
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
