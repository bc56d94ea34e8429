package slurm

import (
	"os"
	"testing"
)

func TestGresGPUs_Forms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"N/A", 0}, {"(null)", 0},
		{"gpu:8", 8},
		{"gpu:3(IDX:0-2)", 3},
		{"gpu:a100:4(S:0-1)", 4},
		{"gpu:(null):3(IDX:0,2-3)", 3},
		{"gres:gpu:2", 2},
		{"gres/gpu=2", 2},
		{"gpu:a100:2,gpu:v100:1,nic:4", 3}, // 2 + 1; nic ignored
		{"gpu:2(IDX:0,3),nic:1", 2},
	} {
		got, err := GresGPUs(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("GresGPUs(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"gpu:x", "gpu:-1", "gres:gpu:two"} {
		if _, err := GresGPUs(bad); err == nil {
			t.Errorf("GresGPUs(%q): no error", bad)
		}
	}
}

// testdata/*.json are squeue --json and sinfo --json of Slurm 22.05.8
// (scripts/local-slurm.sh): job 1 runs on node2 with 7 CPUs, 20000 MiB and
// 3 GPUs; job 2 is held with a profile comment.
func TestParse_Captured2205(t *testing.T) {
	sq, err := os.ReadFile("testdata/squeue-held.json")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := ParseJobs(sq)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	run, held := jobs[0], jobs[1]
	if run.ID != 1 || run.State != "RUNNING" || run.Nodes != "node2" || run.CPUs != 7 || run.MemPerNodeMiB != 20000 || run.GPUsPerNode != 3 || run.Held() {
		t.Errorf("running job = %+v", run)
	}
	if held.ID != 2 || !held.Held() || held.Reason != "JobHeldUser" || held.GPUsPerNode != 2 || held.Comment != "synergy:profile=/a b.json" || held.MemPerNodeMiB != 0 {
		t.Errorf("held job = %+v", held)
	}
	si, err := os.ReadFile("testdata/sinfo-mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := ParseNodes(si)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes))
	}
	n := nodes[1]
	if n.Name != "node2" || n.State != "mixed" || n.CPUs != 24 || n.MemMiB != 476837 || n.GPUs != 8 ||
		n.AllocCPUs != 7 || n.AllocMemMiB != 20000 || n.AllocGPUs != 3 {
		t.Errorf("node2 = %+v", n)
	}
}

func TestParse_Garbage(t *testing.T) {
	for _, in := range []string{``, `{`, `{"jobs": 3}`, `{"errors": [{"error": "boom"}], "jobs": []}`} {
		if _, err := ParseJobs([]byte(in)); err == nil {
			t.Errorf("ParseJobs(%q): no error", in)
		}
	}
	if _, err := ParseNodes([]byte(`{"nodes": [{"name": "n1", "gres": "gpu:lots"}]}`)); err == nil {
		t.Error("ParseNodes with a bad gres: no error")
	}
}

func TestParseJobID(t *testing.T) {
	for in, want := range map[string]int{"42\n": 42, "42;cluster\n": 42} {
		if got, err := ParseJobID(in); err != nil || got != want {
			t.Errorf("ParseJobID(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "sbatch: error", "0"} {
		if _, err := ParseJobID(in); err == nil {
			t.Errorf("ParseJobID(%q): no error", in)
		}
	}
}
