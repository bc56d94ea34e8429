package sensitivity_test

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// The exports read back with sensitivitytest's readers, as a consumer of
// them would read them (sensitivitytest imports sensitivity, so these
// tests live outside the package; hooks_test.go lends them its helpers).

func TestSynergyGrid_RoundTrip(t *testing.T) {
	g, err := sensitivity.ExportSynergyGrid(sensitivity.GridProfile(), sensitivity.SmallServer)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := sensitivity.EncodeJSON(&buf, g); err != nil {
		t.Fatal(err)
	}
	back, err := sensitivitytest.DecodeSynergyGrid(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, back) {
		t.Errorf("round trip changed the grid:\n%+v\n%+v", g, back)
	}
	m := back.Matrix()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if v, ok := m.At(g.FairCPUsPerGPU, g.FairMemBytesPerGPU); !ok || v != 1 {
		t.Errorf("matrix at the fair share = %v (in range %v), want 1", v, ok)
	}
}

func TestDecodeSynergyGrid_Errors(t *testing.T) {
	g, _ := sensitivity.ExportSynergyGrid(sensitivity.GridProfile(), sensitivity.SmallServer)
	var buf bytes.Buffer
	sensitivity.EncodeJSON(&buf, g)
	good := buf.String()
	tests := []struct{ name, in, field string }{
		{"unknown field", strings.Replace(good, `"format"`, `"extra": 1, "format"`, 1), "extra"},
		{"wrong format", strings.Replace(good, sensitivity.SynergyGridVersion, "synergy-grid/v9", 1), "format"},
		{"no gpus", strings.Replace(good, `"gpus": 1`+"\n  }", `"gpus": 0`+"\n  }", 1), "server gpus"},
		{"negative cell", strings.Replace(good, `"table": [`+"\n    [\n      ", `"table": [`+"\n    [\n      -", 1), "table[0][0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == good {
				t.Fatal("test input not modified")
			}
			_, err := sensitivitytest.DecodeSynergyGrid(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("err = %v, want one naming %q", err, tt.field)
			}
		})
	}
}

func TestSlurmAndK8s_SmallestAt95PctRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*sensitivity.Profile)
		slurm     string
		cpuMilli  string
		memory    string
		unlimited bool
	}{
		// best 392; 95% = 372.4: the first cell reaching it, fewest CPUs
		// first, is (1 CPU, 384 MiB) = 380
		{"measured grid", func(*sensitivity.Profile) {}, "--cpus-per-gpu=1 --mem-per-gpu=384M", "1000m", "384Mi", false},
		// two GPUs: per GPU 0.5 CPU → 1 (whole cores), 192 MiB
		{"two GPUs", func(p *sensitivity.Profile) { p.Job.GPUs = 2 }, "--cpus-per-gpu=1 --mem-per-gpu=192M", "1000m", "384Mi", false},
		// only unlimited memory reaches 95%: the host's DRAM (8 GiB)
		{"unlimited needed", func(p *sensitivity.Profile) {
			for i := range p.Cells {
				if p.Cells[i].MemLimitBytes == 384*sensitivity.MiB {
					p.Cells[i].SamplesPerS = 100
				}
			}
		}, "--cpus-per-gpu=1 --mem-per-gpu=8G", "1000m", "8192Mi", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sensitivity.GridProfile()
			tt.edit(p)
			s, a, err := sensitivity.ExportSlurm(p)
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.slurm {
				t.Errorf("slurm = %q, want %q", s, tt.slurm)
			}
			cpg, mpg, err := sensitivitytest.ParseSlurm(s)
			if err != nil {
				t.Fatal(err)
			}
			// round trip: what Slurm is asked for covers the allocation
			if float64(cpg*a.GPUs) < a.CPUs || mpg*int64(a.GPUs) < a.MemBytes {
				t.Errorf("slurm %q asks less than the allocation %+v", s, a)
			}
			if a.SamplesPerS < sensitivity.IdealFraction*a.BestSamplesPerS {
				t.Errorf("allocation %+v does not reach 95%% of the best", a)
			}
			y, _, err := sensitivity.ExportK8s(p)
			if err != nil {
				t.Fatal(err)
			}
			r, err := sensitivitytest.ParseK8s(strings.NewReader(y))
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			want := map[string]string{"cpu": tt.cpuMilli, "memory": tt.memory, "nvidia.com/gpu": strconv.Itoa(a.GPUs)}
			if !reflect.DeepEqual(r.Requests, want) || !reflect.DeepEqual(r.Limits, want) {
				t.Errorf("k8s requests %v limits %v, want %v for both", r.Requests, r.Limits, want)
			}
			if a.MemUnlimited != tt.unlimited || strings.Contains(y, "unlimited") != tt.unlimited {
				t.Errorf("unlimited = %v (yaml says so: %v), want %v", a.MemUnlimited, strings.Contains(y, "unlimited"), tt.unlimited)
			}
		})
	}
	if _, err := sensitivitytest.ParseK8s(strings.NewReader("resources:\n  requests:\n    cpu: 1\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("unquoted value: err = %v, want one naming line 3", err)
	}
	if _, _, err := sensitivitytest.ParseSlurm("--cpus-per-gpu=1"); err == nil {
		t.Error("ParseSlurm accepted a line without --mem-per-gpu")
	}
}

func FuzzDecodeSynergyGrid(f *testing.F) {
	g, _ := sensitivity.ExportSynergyGrid(sensitivity.GridProfile(), sensitivity.SmallServer)
	var buf bytes.Buffer
	sensitivity.EncodeJSON(&buf, g)
	f.Add(buf.String())
	f.Add(`{"format": "synergy-grid/v1"}`)
	f.Fuzz(func(t *testing.T, s string) {
		g, err := sensitivitytest.DecodeSynergyGrid(strings.NewReader(s))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := sensitivity.EncodeJSON(&b, g); err != nil {
			t.Fatal(err)
		}
		back, err := sensitivitytest.DecodeSynergyGrid(&b)
		if err != nil || !reflect.DeepEqual(g, back) {
			t.Fatalf("accepted grid does not round-trip: %v", err)
		}
	})
}

func FuzzParseExports(f *testing.F) {
	f.Add("--cpus-per-gpu=3 --mem-per-gpu=2G")
	f.Add("resources:\n  requests:\n    cpu: \"500m\"\n")
	f.Add("('ResNet-18 (batch size 64)', 1)")
	f.Fuzz(func(t *testing.T, s string) {
		if c, m, err := sensitivitytest.ParseSlurm(s); err == nil {
			c2, m2, err := sensitivitytest.ParseSlurm(strings.Replace("--cpus-per-gpu=C --mem-per-gpu="+sensitivity.SlurmMem(m), "C", strconv.Itoa(c), 1))
			if err != nil || c2 != c || m2 != m {
				t.Fatalf("slurm %q: %d %d does not re-read (%d %d %v)", s, c, m, c2, m2, err)
			}
		}
		if jt, sc, err := sensitivity.ParseGavelKey(s); err == nil {
			if jt2, sc2, err := sensitivity.ParseGavelKey(sensitivity.GavelKey(jt, sc)); err != nil || jt2 != jt || sc2 != sc {
				t.Fatalf("gavel key %q does not re-read", s)
			}
		}
		sensitivitytest.ParseK8s(strings.NewReader(s)) // must not panic
	})
}
