package scheduler

import (
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/internal/safefile"
)

func TestPreset_Shapes(t *testing.T) {
	cases := []struct {
		name             string
		servers, gpus    int
		cpus             float64
		fairCPU, fairMem float64
	}{
		// default: 24 CPUs / 8 GPUs = 3; 500 GB / 8 = 62.5 GB
		{"default", 16, 128, 24, 3, 62.5e9},
		{"philly", 64, 512, 24, 3, 62.5e9},
		{"cpu4", 16, 128, 32, 4, 62.5e9}, // 32/8 = 4
		{"cpu5", 16, 128, 40, 5, 62.5e9}, // 40/8 = 5
		{"cpu6", 16, 128, 48, 6, 62.5e9}, // 48/8 = 6
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := Preset(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(cl.Servers) != c.servers || cl.Totals().GPUs != c.gpus || cl.Servers[3].CPUs != c.cpus {
				t.Errorf("got %d servers, %d GPUs, %v CPUs each", len(cl.Servers), cl.Totals().GPUs, cl.Servers[3].CPUs)
			}
			if f := cl.FairShare(); f.CPUs != c.fairCPU || f.MemBytes != c.fairMem {
				t.Errorf("fair share %+v, want %v CPUs %v B", f, c.fairCPU, c.fairMem)
			}
			if cl.Servers[3].Name != "server-3" {
				t.Errorf("server 3 named %q", cl.Servers[3].Name)
			}
		})
	}
	if _, err := Preset("huge"); err == nil || !strings.Contains(err.Error(), "default") {
		t.Errorf("unknown preset error = %v", err)
	}
}

func TestParseCluster_Valid(t *testing.T) {
	c, err := ParseCluster([]byte(`{"name": "lab",
  "servers": [{"name": "big", "rack": 1, "gpus": 4, "cpus": 64, "mem_bytes": 1000000000000}],
  "groups": [{"count": 2, "gpus": 8, "cpus": 24, "mem_bytes": 500000000000}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 3 || c.Servers[0].Name != "big" || c.Servers[0].Rack != 1 || c.Servers[2].Name != "server-2" {
		t.Fatalf("servers = %+v", c.Servers)
	}
	// totals: 4+8+8 = 20 GPUs, 64+24+24 = 112 CPUs
	if tot := c.Totals(); tot.GPUs != 20 || tot.CPUs != 112 {
		t.Errorf("totals = %+v", tot)
	}
}

func TestParseCluster_Errors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"syntax", "{\"servers\": [\n  {\"gpus\": 8,,}]}", "line 2"},
		{"type", "{\"servers\": [\n {\"gpus\": \"eight\"}]}", "line 2 col"},
		{"type field", "{\"servers\": [{\"gpus\": \"eight\"}]}", "servers.gpus"},
		{"unknown field", "{\"servers\": [], \"gpu\": 1}", `unknown field "gpu"`},
		{"empty", "", "empty file"},
		{"no servers", "{}", "no servers"},
		{"zero gpus", `{"servers": [{"gpus": 0, "cpus": 24, "mem_bytes": 1}]}`, "servers[0].gpus = 0"},
		{"bad cpus", `{"servers": [{"gpus": 8, "cpus": -1, "mem_bytes": 1}]}`, "servers[0].cpus = -1"},
		{"bad mem", `{"servers": [{"gpus": 8, "cpus": 2, "mem_bytes": 0}]}`, "servers[0].mem_bytes = 0"},
		{"dup name", `{"servers": [{"name":"a","gpus": 8, "cpus": 2, "mem_bytes": 1},{"name":"a","gpus": 8, "cpus": 2, "mem_bytes": 1}]}`, `servers[1].name = "a": same as servers[0]`},
		{"group count", `{"groups": [{"count": 0, "gpus": 8, "cpus": 2, "mem_bytes": 1}]}`, "groups[0].count = 0"},
		{"group field", `{"servers": [{"gpus": 1, "cpus": 1, "mem_bytes": 1}], "groups": [{"count": 2, "gpus": 8, "cpus": 0, "mem_bytes": 1}]}`, "groups[0] (server 1).cpus = 0"},
		{"trailing", `{"servers": [{"gpus": 1, "cpus": 1, "mem_bytes": 1}]} x`, "trailing data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCluster([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestLoadCluster_PresetOrFile(t *testing.T) {
	c, err := LoadCluster("philly")
	if err != nil || c.Totals().GPUs != 512 {
		t.Fatalf("LoadCluster(philly) = %d GPUs, %v", c.Totals().GPUs, err)
	}
	if _, err := LoadCluster(t.TempDir() + "/none.json"); err == nil || !strings.Contains(err.Error(), "neither a file nor a preset") {
		t.Errorf("missing file error = %v", err)
	}
}

func FuzzParseCluster(f *testing.F) {
	f.Add([]byte(`{"servers": [{"gpus": 8, "cpus": 24, "mem_bytes": 500000000000}]}`))
	f.Add([]byte(`{"groups": [{"count": 3, "prefix": "n", "gpus": 4, "cpus": 8, "mem_bytes": 1}]}`))
	f.Add([]byte(`{"servers": [{"gpus": 1e99}]}`))
	f.Add([]byte(`{"servers": [{"gpus": 8, "cpus": 8, "mem_bytes": 5}], "groups": [{"count": 9223372036854775807, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`))
	f.Add([]byte(`{"name": "a", "name": "b‮", "groups": [{"count": 1, "gpus": 8, "cpus": 1e-300, "mem_bytes": 5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCluster(data)
		if err == nil && (len(c.Servers) > maxServers || safefile.TextProblem(c.Name, safefile.MaxNameBytes) != "") {
			t.Fatalf("accepted %d servers named %q", len(c.Servers), c.Name)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid cluster: %v", err)
		}
		if c.Totals().GPUs < 1 {
			t.Fatal("accepted a cluster without GPUs")
		}
	})
}

func TestClusterGPUTypeOptional(t *testing.T) {
	old := `{"name":"c","servers":[{"name":"a","rack":0,"gpus":8,"cpus":24,"mem_bytes":500000000000}]}`
	c, err := ParseCluster([]byte(old))
	if err != nil || c.Servers[0].GPUType != "" {
		t.Fatalf("an untyped cluster file: %+v %v", c, err)
	}
	typed := `{"name":"c","servers":[{"name":"a","rack":0,"gpus":8,"cpus":24,"mem_bytes":500000000000,"gpu_type":"h100"}]}`
	if c, err = ParseCluster([]byte(typed)); err != nil || c.Servers[0].GPUType != "h100" {
		t.Fatalf("a typed cluster file: %+v %v", c, err)
	}
	groups := `{"name":"c","groups":[{"count":2,"prefix":"k","gpus":4,"cpus":48,"mem_bytes":500000000000,"gpu_type":"k80"},{"count":1,"gpus":8,"cpus":24,"mem_bytes":500000000000}]}`
	if c, err = ParseCluster([]byte(groups)); err != nil || c.Servers[1].GPUType != "k80" || c.Servers[2].GPUType != "" {
		t.Fatalf("typed groups: %+v %v", c, err)
	}
	bad := `{"name":"c","servers":[{"name":"a","rack":0,"gpus":8,"cpus":24,"mem_bytes":500000000000,"gpu_type":" h100"}]}`
	if _, err = ParseCluster([]byte(bad)); err == nil || !strings.Contains(err.Error(), "gpu_type") {
		t.Fatalf("error %v, want one naming gpu_type", err)
	}
}
