package gavel

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

const mib = 1 << 20

// typedProfile is the demo profile (synthtrain, batch 16, 1 GPU, emulated)
// as measured on gpuType, every rate times speed, saved in dir.
func typedProfile(t *testing.T, dir, file, gpuType string, speed float64, mode string) string {
	t.Helper()
	p := sensitivitytest.Demo(dir)
	p.GPU.Type, p.GPU.Mode = gpuType, mode
	for i := range p.Cells {
		p.Cells[i].SamplesPerS *= speed
		p.Cells[i].SamplesPerSCI95 *= speed
	}
	p.StepOnly.SamplesPerS *= speed
	path := filepath.Join(dir, file)
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// shareAt reads the v100 row at the demo's measured cell (0.5 CPUs, 64 MiB)
// and the k80 row at (2 CPUs, unlimited memory = the host's 24 GiB).
func shareAt(gt string) (float64, float64) {
	if gt == "v100" {
		return 0.5, 64 * mib
	}
	return 2, 24 << 30
}

func TestThroughputsFromProfiles_OneRowPerType(t *testing.T) {
	dir := t.TempDir()
	v := typedProfile(t, dir, "v100.json", "v100", 1, sensitivity.GPUModeEmulated)
	k := typedProfile(t, dir, "k80.json", "k80", 0.4, sensitivity.GPUModeNVML)
	th, rows, err := ThroughputsFromProfiles([]string{v, k}, shareAt)
	if err != nil {
		t.Fatal(err)
	}
	jt := JobType{Model: "synthtrain (batch size 16)", ScaleFactor: 1}
	row, err := th.Row(jt, []string{"v100", "k80"})
	if err != nil {
		t.Fatal(err)
	}
	// The demo's measured cells: 27.8 samples/s at 0.5 CPUs and 64 MiB,
	// 387.5 at 2 CPUs unlimited; steps/s = samples/s ÷ batch 16.
	want := []float64{27.8 / 16, 0.4 * 387.5 / 16}
	for i := range want {
		if math.Abs(row[i]-want[i]) > 1e-9 {
			t.Errorf("row[%d] = %v steps/s, want %v", i, row[i], want[i])
		}
	}
	if len(rows) != 2 || !rows[0].Emulated || rows[1].Emulated || rows[0].GPUType != "v100" || rows[0].File != v {
		t.Errorf("rows = %+v: want v100 from %s labelled emulated, k80 not", rows, v)
	}
	if rows[0].CPUsPerGPU != 0.5 || rows[0].MemBytesPerGPU != 64*mib || rows[0].Clamped {
		t.Errorf("v100 row read at %v CPUs, %v bytes (clamped %v); want the share 0.5, 64 MiB", rows[0].CPUsPerGPU, rows[0].MemBytesPerGPU, rows[0].Clamped)
	}
}

func TestThroughputsFromProfiles_DefaultShareClamps(t *testing.T) {
	dir := t.TempDir()
	v := typedProfile(t, dir, "v100.json", "v100", 1, sensitivity.GPUModeEmulated)
	_, rows, err := ThroughputsFromProfiles([]string{v}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3 CPUs and 62.5 GB per GPU lie beyond the demo's 2 CPUs and 24 GiB:
	// the nearest edge (387.5 samples/s) is read, and said so.
	if r := rows[0]; r.CPUsPerGPU != 3 || r.MemBytesPerGPU != 62.5e9 || !r.Clamped || math.Abs(r.SamplesPerS-387.5) > 1e-9 {
		t.Errorf("row = %+v, want 3 CPUs, 62.5 GB, clamped, 387.5 samples/s", r)
	}
}

func TestThroughputsFromProfiles_Conflicts(t *testing.T) {
	dir := t.TempDir()
	v := typedProfile(t, dir, "v100.json", "v100", 1, sensitivity.GPUModeEmulated)
	v2 := typedProfile(t, dir, "v100-again.json", "v100", 0.9, sensitivity.GPUModeNVML)
	untyped := typedProfile(t, dir, "untyped.json", "", 1, sensitivity.GPUModeEmulated)
	p := sensitivitytest.Demo(dir)
	p.GPU.Type, p.Job.Batch = "k80", 32
	batch := filepath.Join(dir, "batch32.json")
	if err := p.Save(batch); err != nil {
		t.Fatal(err)
	}
	p = sensitivitytest.Demo(dir)
	p.GPU.Type, p.Job.GPUs = "k80", 2
	gpus := filepath.Join(dir, "gpus2.json")
	if err := p.Save(gpus); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"two profiles of one type", []string{v, v2}, []string{v2, "gpu.type", v}},
		{"no type", []string{untyped}, []string{untyped, "gpu.type: empty"}},
		{"another batch under one name", []string{v, batch}, []string{batch, "job.batch is 32", v}},
		{"another GPU count under one name", []string{v, gpus}, []string{gpus, "job.gpus is 2", v}},
		{"missing file", []string{filepath.Join(dir, "nope.json")}, []string{"nope.json"}},
	} {
		_, _, err := ThroughputsFromProfiles(c.paths, shareAt)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", c.name, err, w)
			}
		}
	}
}

func TestThroughputs_MergeRefusesADoubleEntry(t *testing.T) {
	file, err := ParseThroughputs([]byte(`{"v100": {"('A', 1)": {"null": 2}}, "k80": {"('A', 1)": {"null": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v := typedProfile(t, dir, "v100.json", "v100", 1, sensitivity.GPUModeEmulated)
	prof, _, err := ThroughputsFromProfiles([]string{v}, shareAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.Merge(prof, "profiles"); err != nil {
		t.Fatal(err)
	}
	jt := JobType{Model: "synthtrain (batch size 16)", ScaleFactor: 1}
	if got := file.Isolated["v100"][jt]; math.Abs(got-27.8/16) > 1e-9 {
		t.Errorf("merged v100 entry %v, want %v", got, 27.8/16)
	}
	if file.Isolated["v100"][JobType{Model: "A", ScaleFactor: 1}] != 2 {
		t.Error("the file's own entry was lost")
	}
	if err := file.Merge(prof, "profiles"); err == nil || !strings.Contains(err.Error(), "synthtrain (batch size 16)") || !strings.Contains(err.Error(), "v100") {
		t.Errorf("second merge: %v, want an error naming the job type and v100", err)
	}
}

func TestProfilePaths_DirectoryAndList(t *testing.T) {
	dir := t.TempDir()
	b := typedProfile(t, dir, "b.json", "k80", 1, sensitivity.GPUModeEmulated)
	a := typedProfile(t, dir, "a.json", "v100", 1, sensitivity.GPUModeEmulated)
	got, err := ProfilePaths(dir + "," + a)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a, b, a}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths = %v, want %v (directory in name order, then the file)", got, want)
	}
	if _, err := ProfilePaths(t.TempDir()); err == nil || !strings.Contains(err.Error(), "without *.json") {
		t.Errorf("empty directory: %v", err)
	}
}

// Every job type of Gavel's throughputs file is one of the generator's
// templates (the zoo's table, in its order): the generator can draw every
// job the file prices, and nothing it does not.
func TestTemplates_AreTheFilesJobTypes(t *testing.T) {
	th, err := LoadThroughputs("testdata/generator/throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	zs := zoo.GavelTemplates()
	if len(zs) != len(Templates) {
		t.Fatalf("%d zoo templates, %d generator templates", len(zs), len(Templates))
	}
	names := map[string]bool{}
	for i, z := range zs {
		if z.Name != Templates[i].Model {
			t.Errorf("template %d: zoo %q, generator %q (one table, one order)", i, z.Name, Templates[i].Model)
		}
		names[z.Name] = true
	}
	priced := map[string]bool{}
	for wt, iso := range th.Isolated {
		for jt := range iso {
			if !names[jt.Model] {
				t.Errorf("%s: the file prices %q, no template", wt, jt.Model)
			}
			priced[jt.Model] = true
		}
	}
	if len(priced) != len(names) {
		t.Errorf("the file prices %d of the %d templates", len(priced), len(names))
	}
}
