package k8s

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

var update = flag.Bool("update", false, "rewrite deploy/examples/profiles from the curves in examples_test.go")

const gib = int64(1) << 30

// exampleDir holds the example profiles the demo and the tests share.
var exampleDir = filepath.Join("..", "deploy", "examples", "profiles")

// exampleCurves are the example profiles: synthetic throughput curves
// (samples/s) over CPUs and memory, in the profile format. On nodes of
// 4 GPUs, 16 CPUs and 128 GiB (a GPU-proportional share of 4 CPUs and
// 32 GiB) their ideal demand per GPU is:
//
//	image     6 CPUs, 32 GiB   CPU-bound decode: 100 samples/s per core up to 6
//	audio     4 CPUs, 64 GiB   fetch-bound unless its 64 GiB dataset is cached
//	language  1 CPU,  16 GiB   insensitive: the GPU step bounds it
var exampleCurves = []struct {
	name  string
	batch int
	f     func(cpus float64, memBytes int64) float64
}{
	{"image", 256, func(c float64, m int64) float64 {
		v := math.Min(100*c, 600)
		if m > 0 && m < 32*gib {
			v /= 2
		}
		return v
	}},
	{"audio", 64, func(c float64, m int64) float64 {
		v := math.Min(100*c, 400)
		switch {
		case m > 0 && m < 32*gib:
			v = math.Min(v, 100)
		case m > 0 && m < 64*gib:
			v = math.Min(v, 200)
		}
		return v
	}},
	{"language", 128, func(float64, int64) float64 { return 100 }},
}

// exampleProfile builds one example profile: every cell of the grid is
// given (phase grid, as a profile of strategy grid has them) from the
// curve, GPU mode none, and the profile says it is a synthetic example.
func exampleProfile(name string, batch int, f func(float64, int64) float64) *sensitivity.Profile {
	p := &sensitivity.Profile{
		SchemaVersion: sensitivity.SchemaVersion,
		ToolVersion:   "example",
		CreatedAt:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Job:           sensitivity.JobInfo{Name: name, Command: []string{"example"}, Runner: "none", Batch: batch, GPUs: 1, MaxIterations: 1000},
		Host:          sensitivity.HostInfo{CPUModel: "example", LogicalCPUs: 16, DRAMBytes: 128 * gib, CgroupMode: "none"},
		GPU:           sensitivity.GPUInfo{Mode: sensitivity.GPUModeNone, Note: "synthetic example for docs, demo and tests: every cell is a curve written by k8s/examples_test.go, not a measurement"},
		Strategy:      "example",
		Axes:          sensitivity.Axes{CPUs: []float64{1, 2, 4, 6, 8, 16}, MemLimitBytes: []int64{16 * gib, 32 * gib, 64 * gib, 0}},
	}
	for _, c := range p.Axes.CPUs {
		for _, m := range p.Axes.MemLimitBytes {
			p.Cells = append(p.Cells, sensitivity.Cell{CPUs: c, MemLimitBytes: m, Measured: true, Phase: sensitivity.PhaseGrid, SamplesPerS: f(c, m)})
		}
	}
	return p
}

func exampleJSON(t *testing.T, name string) []byte {
	t.Helper()
	for _, e := range exampleCurves {
		if e.name == name {
			var b bytes.Buffer
			if err := exampleProfile(e.name, e.batch, e.f).Encode(&b); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
	}
	t.Fatalf("no example profile %q", name)
	return nil
}

// TestExampleProfiles_MatchCurves keeps deploy/examples/profiles equal to
// the curves above (go test ./k8s -run TestExampleProfiles -update).
func TestExampleProfiles_MatchCurves(t *testing.T) {
	for _, e := range exampleCurves {
		want := exampleJSON(t, e.name)
		path := filepath.Join(exampleDir, e.name+".json")
		if *update {
			if err := os.MkdirAll(exampleDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the %s curve (run with -update)", path, e.name)
		}
		if _, err := sensitivity.Decode(bytes.NewReader(got)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
