package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

const tmib = 1 << 20

// matrixProfile writes a small profile: CPU points at 0.5 and 2 cores,
// memory points at 2 cores, and (with validate) one validate cell.
func matrixProfile(t *testing.T, dir, name string, validate bool) string {
	t.Helper()
	p := &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion, ToolVersion: "test",
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Job:       sensitivity.JobInfo{Name: "audio", Batch: 16, GPUs: 1},
		Host:      sensitivity.HostInfo{DRAMBytes: 8 << 30, DatasetBytes: 256 * tmib, DatasetFiles: 175, ReadLimitBytesPS: 40e6},
		GPU:       sensitivity.GPUInfo{Mode: sensitivity.GPUModeEmulated},
		Strategy:  "optimistic",
		Axes:      sensitivity.Axes{CPUs: []float64{0.5, 1, 2}, MemLimitBytes: []int64{64 * tmib, 128 * tmib, 384 * tmib, 0}},
		Cells: []sensitivity.Cell{
			{CPUs: 0.5, MemLimitBytes: 0, Measured: true, Phase: sensitivity.PhaseCPU, SamplesPerS: 300, SamplesPerSCI95: 3},
			{CPUs: 2, MemLimitBytes: 0, Measured: true, Phase: sensitivity.PhaseCPU, SamplesPerS: 390, SamplesPerSCI95: 4},
			{CPUs: 2, MemLimitBytes: 64 * tmib, Measured: true, Phase: sensitivity.PhaseMemory, SamplesPerS: 27, SamplesPerSCI95: 0.5},
			{CPUs: 2, MemLimitBytes: 384 * tmib, Measured: true, Phase: sensitivity.PhaseMemory, SamplesPerS: 385, SamplesPerSCI95: 4},
		},
	}
	if validate {
		p.Cells = append(p.Cells, sensitivity.Cell{CPUs: 1, MemLimitBytes: 128 * tmib, Measured: true, Phase: sensitivity.PhaseValidate, SamplesPerS: 31, SamplesPerSCI95: 1})
	}
	p.SortCells()
	path := filepath.Join(dir, name)
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func runMatrix(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"matrix"}, args...)...)
	return out, err
}

func TestMatrix_BadInputNamesTheFlagOrField(t *testing.T) {
	dir := t.TempDir()
	good := matrixProfile(t, dir, "p.json", false)
	one, err := sensitivity.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	one.Cells = one.Cells[len(one.Cells)-1:] // (2, unlimited) alone
	oneCell := filepath.Join(dir, "one.json")
	if err := one.Save(oneCell); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	raw, _ := os.ReadFile(good)
	os.WriteFile(bad, bytes.Replace(raw, []byte(`"mode": "emulated"`), []byte(`"mode": "tpu"`), 1), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"export", good}, "--format: missing"},
		{[]string{"export", "--format", "csv", good}, `--format: "csv" is not one of synergy-grid, gavel, slurm, k8s`},
		{[]string{"export", "--format", "slurm", "--server-mem", "5XB", good}, "--server-mem: \"5XB\" is not a size"},
		{[]string{"export", "--format", "gavel", "--server-gpus", "0", good}, "--server-gpus: 0"},
		{[]string{"export", "--format", "gavel", "--server-cpus", "-1", good}, "--server-cpus: -1"},
		{[]string{"export", "--format", "k8s"}, "matrix export: want PROFILE, got 0"},
		{[]string{"validate", "--holdout", "0", good}, "--holdout: 0"},
		{[]string{"validate", "--holdout", "4", good}, "--holdout: holdout: k = 4 leaves nothing to fit"},
		{[]string{"validate", oneCell}, "no cell was measured for validation (phase \"validate\"; synergy profile --validate K measures some), and leave-1-out cannot stand in: holdout: k = 1 leaves nothing to fit (1 measured cells)"},
		{[]string{"show", "--plot", filepath.Join(dir, "h.pdf"), good}, "--plot:"},
		{[]string{"diff", good}, "matrix diff: want A B, got 1"},
		{[]string{"show", filepath.Join(dir, "none.json")}, "none.json"},
	}
	for _, f := range sensitivity.ExportFormats() {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"export", "--format", f, bad}, "gpu.mode: \"tpu\""})
	}
	cases = append(cases, struct {
		args []string
		want string
	}{[]string{"show", bad}, "gpu.mode"})
	for _, c := range cases {
		_, err := runMatrix(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestMatrix_ShowFillsAndDrawsHeatmap(t *testing.T) {
	dir := t.TempDir()
	path := matrixProfile(t, dir, "p.json", true)
	plot := filepath.Join(dir, "h.svg")
	out, err := runMatrix(t, "show", "--plot", plot, path)
	if err != nil {
		t.Fatal(err)
	}
	// measured cells print with their interval, predicted ones with ~;
	// the fit and the validation are summarised
	for _, want := range []string{"390.0 ±4.0", "27.0 ±0.5", "~", sensitivity.ModelMinGPUCPUFetch, "strategy optimistic: 5 of 12 cells measured", "validation over 1 cells: MAPE", "minio-formula MAPE"} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("heatmap %s: %v", plot, err)
	}
}

func TestMatrix_DiffJSONAndValidate(t *testing.T) {
	dir := t.TempDir()
	a := matrixProfile(t, dir, "a.json", false)
	b := matrixProfile(t, dir, "b.json", true)
	out, err := runMatrix(t, "diff", "--json", a, b)
	if err != nil {
		t.Fatal(err)
	}
	var cmp sensitivity.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatalf("diff --json: %v\n%s", err, out)
	}
	// same measurements: measured cells agree exactly, and the one cell b
	// measured for validation is scored against a's prediction
	if len(cmp.Cells) != 12 {
		t.Errorf("%d cells, want 12", len(cmp.Cells))
	}
	for _, d := range cmp.Cells {
		if d.AMeasured && d.DiffPct != 0 {
			t.Errorf("measured cell differs: %+v", d)
		}
	}
	text, err := runMatrix(t, "diff", a, b)
	if err != nil || !strings.Contains(text, "A's predictions vs B over") || !strings.Contains(text, "minio-formula") {
		t.Errorf("diff table: %v\n%s", err, text)
	}
	v, err := runMatrix(t, "validate", "--json", b)
	if err != nil {
		t.Fatal(err)
	}
	var val sensitivity.Validation
	if err := json.Unmarshal([]byte(v), &val); err != nil || val.Cells != 1 || val.WorstCPUs != 1 || val.WorstMemBytes != 128*tmib {
		t.Errorf("validate --json = %+v (%v), want one cell at (1, 128MiB)", val, err)
	}
	h, err := runMatrix(t, "validate", "--holdout", "1", a)
	if err != nil || !strings.Contains(h, "leave-1-out") || !strings.Contains(h, "validation over") {
		t.Errorf("validate --holdout 1: %v\n%s", err, h)
	}
}

// A profile with no cell measured for validation (make demo's, strategy
// axes) is validated by leaving one measured cell out at a time, and the
// output says so; the JSON stays alone on stdout.
func TestMatrix_ValidateWithoutValidateCellsHoldsOneOut(t *testing.T) {
	dir := t.TempDir()
	path := matrixProfile(t, dir, "p.json", false)
	out, _, err := runCLI(t, "matrix", "validate", path)
	if err != nil {
		t.Fatal(err)
	}
	held, _, err := runCLI(t, "matrix", "validate", "--holdout", "1", path)
	if err != nil {
		t.Fatal(err)
	}
	// the same figures as --holdout 1, introduced by why
	want := path + ": no cell was measured for validation (phase \"validate\"; synergy profile --validate K measures some): leave-1-out over the measured cells instead\n"
	if !strings.HasPrefix(out, want) || strings.TrimPrefix(out, want) != strings.TrimPrefix(held, path+": leave-1-out over the measured cells\n") {
		t.Errorf("validate without validate cells:\n%s\nwant %q then the --holdout 1 figures:\n%s", out, want, held)
	}
	js, stderr, err := runCLI(t, "matrix", "validate", "--json", path)
	var v sensitivity.Validation
	if err != nil || json.Unmarshal([]byte(js), &v) != nil || v.Cells != 4 || !strings.Contains(stderr, "leave-1-out over the measured cells instead") {
		t.Errorf("validate --json: %v, %+v, stderr %q", err, v, stderr)
	}
}

func TestMatrix_ExportFormats(t *testing.T) {
	dir := t.TempDir()
	path := matrixProfile(t, dir, "p.json", false)
	out, err := runMatrix(t, "export", "--format", "synergy-grid", "--server-cpus", "2", "--server-mem", "1GB", "--server-gpus", "1", path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sensitivitytest.DecodeSynergyGrid(strings.NewReader(out))
	if err != nil {
		t.Fatalf("synergy-grid output does not read back: %v\n%s", err, out)
	}
	if g.Table[2][1] != 1 || g.ClampedCells != 30 {
		t.Errorf("fair share cell %v, clamped %d; want 1 and 30 (rows above 2 CPUs)", g.Table[2][1], g.ClampedCells)
	}
	s, err := runMatrix(t, "export", "--format", "slurm", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sensitivitytest.ParseSlurm(s); err != nil {
		t.Errorf("slurm output %q: %v", s, err)
	}
	k, err := runMatrix(t, "export", "--format", "k8s", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sensitivitytest.ParseK8s(strings.NewReader(k)); err != nil {
		t.Errorf("k8s output: %v\n%s", err, k)
	}
}

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestMatrix_OutputsGolden pins every matrix subcommand's output, byte for
// byte, on the test profiles (temporary paths read as DIR). Run with
// -update to rewrite testdata/matrix_*.golden after a deliberate change.
func TestMatrix_OutputsGolden(t *testing.T) {
	dir := t.TempDir()
	a := matrixProfile(t, dir, "a.json", false)
	b := matrixProfile(t, dir, "b.json", true)
	v1 := filepath.Join(dir, "v1.json")
	raw, err := os.ReadFile(goldenProfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v1, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"show_a", []string{"show", a}},
		{"show_b", []string{"show", b}},
		{"show_v1", []string{"show", v1}},
		{"diff_ab", []string{"diff", a, b}},
		{"diff_ab_json", []string{"diff", "--json", a, b}},
		{"diff_v1a", []string{"diff", v1, a}},
		{"validate_b", []string{"validate", b}},
		{"validate_b_json", []string{"validate", "--json", b}},
		{"validate_a_holdout1", []string{"validate", "--holdout", "1", a}},
		{"validate_a_holdout2_json", []string{"validate", "--holdout", "2", "--json", a}},
		{"validate_v1_holdout1", []string{"validate", "--holdout", "1", v1}},
		{"export_a_synergy-grid", []string{"export", "--format", "synergy-grid", "--server-cpus", "2", "--server-mem", "1GB", "--server-gpus", "1", a}},
		{"export_b_gavel", []string{"export", "--format", "gavel", "--server-cpus", "4", "--server-mem", "2GB", "--server-gpus", "2", b}},
		{"export_a_slurm", []string{"export", "--format", "slurm", a}},
		{"export_b_k8s", []string{"export", "--format", "k8s", b}},
		{"export_v1_synergy-grid", []string{"export", "--format", "synergy-grid", v1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, append([]string{"matrix"}, c.args...)...)
			if err != nil {
				t.Fatalf("%v: %v", c.args, err)
			}
			got := strings.ReplaceAll("stdout:\n"+stdout+"stderr:\n"+stderr, dir, "DIR")
			path := filepath.Join("testdata", "matrix_"+c.name+".golden")
			if *updateGolden {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("matrix %v differs from %s:\n--- got\n%s\n--- want\n%s", c.args, path, got, want)
			}
		})
	}
}

// The timeline drawn is the one the profile records for the point, wherever
// it lies; a point with none recorded is refused with the flag named.
func TestMatrix_ShowTimelineReadsTheRecordedFiles(t *testing.T) {
	dir := t.TempDir()
	path := matrixProfile(t, dir, "p.json", false)
	p, err := sensitivity.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "kept.timeline")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	samples := filepath.Join(elsewhere, "cpus2-mem64MiB.samples.jsonl")
	os.WriteFile(samples, []byte(`{"time":"2026-01-01T00:00:00Z","cg_cpu_usage_s":1}
{"time":"2026-01-01T00:00:01Z","cg_cpu_usage_s":2}
`), 0o644)
	os.WriteFile(filepath.Join(elsewhere, "cpus2-mem64MiB.metrics.jsonl"), []byte(`{"iter":0,"data_wait_s":0.1,"step_s":0.1,"ts":1767225600.1,"emulated":true}
{"iter":1,"data_wait_s":0.1,"step_s":0.1,"ts":1767225600.3,"emulated":true}
`), 0o644)
	c := p.Cell(2, 64*tmib)
	c.Stats = &sensitivity.PointStats{Workers: 2, Iterations: 40, MetricsSource: sensitivity.MetricsStream, StopReason: "converged", Timeline: samples}
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	plot := filepath.Join(dir, "t.svg")
	out, _, err := runCLI(t, "matrix", "show", path, "--timeline", "cpus=2 mem=64MiB", "--plot", plot)
	if err != nil {
		t.Fatal(err)
	}
	// one CPU point (100% of a core), one data-wait point, the emulated step
	if want := "timeline of cpus=2 mem=64MiB: 1 GPU, 1 data-wait and 1 CPU points (emulated GPU step"; !strings.Contains(out, want) {
		t.Errorf("output %q lacks %q", out, want)
	}
	if svg, err := os.ReadFile(plot); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("timeline %s: %v", plot, err)
	}
	_, _, err = runCLI(t, "matrix", "show", path, "--timeline", "cpus=2 mem=unlimited", "--plot", plot)
	if err == nil || !strings.Contains(err.Error(), "--timeline") || !strings.Contains(err.Error(), "records no timeline") {
		t.Errorf("point without a timeline: err = %v", err)
	}
}

// The matrix caption names the GPU type a profile measured, and keeps an
// emulated one labelled emulated.
func TestPrintMatrix_NamesTheGPUType(t *testing.T) {
	p := sensitivitytest.Demo(t.TempDir())
	for _, c := range []struct{ mode, typ, want string }{
		{sensitivity.GPUModeEmulated, "v100", "GPU step emulated as a v100 (not measured on a GPU)"},
		{sensitivity.GPUModeEmulated, "", "GPU step emulated (not measured on a GPU)"},
		{sensitivity.GPUModeNVML, "h100", "(samples/s on a h100)"},
	} {
		p.GPU.Mode, p.GPU.Type = c.mode, c.typ
		var b strings.Builder
		if err := printMatrix(&b, p); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s %q: caption does not say %q:\n%s", c.mode, c.typ, c.want, b.String())
		}
	}
}
