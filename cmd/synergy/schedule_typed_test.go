package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const mixedCluster = `{"name": "mixed", "servers": [
 {"name": "v-0", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000, "gpu_type": "v100"},
 {"name": "v-1", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000, "gpu_type": "v100"},
 {"name": "k-0", "gpus": 4, "cpus": 48, "mem_bytes": 500000000000, "gpu_type": "k80"},
 {"name": "k-1", "gpus": 4, "cpus": 48, "mem_bytes": 500000000000, "gpu_type": "k80"}]}`

func TestScheduleTypedCluster(t *testing.T) {
	cluster := writeFile(t, "mixed.json", mixedCluster)
	thr := writeFile(t, "thr.json", `{"v100": {"('gnmt', 1)": {"null": 9}}, "k80": {"('gnmt', 1)": {"null": 3}}}`)
	out, stderr, err := runCLI(t, "schedule", "--cluster", cluster, "--throughputs", thr, "--json", "zoo:res18:gpus=2", "zoo:gnmt:gpus=2", "zoo:lstm:gpus=8")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res scheduleResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(res.Types) != 2 || len(res.Placements) != 2 || len(res.Waiting) != 1 {
		t.Fatalf("%s", out)
	}
	res18, gnmt := res.Placements[0], res.Placements[1]
	if res18.Choice == nil || res18.Type != "k80" || res18.Source != "profile" || !strings.HasPrefix(res18.Servers[0].Server, "k-") {
		t.Errorf("res18: %s", out)
	}
	// Type, CPUs and memory together: res18 holds its ideal 9 CPUs and
	// 62.5 GB per GPU on the K80 it was chosen for, as its rate was read.
	if at := res18.RateAt["k80"]; res18.CPUs != 18 || res18.MemBytes != 125e9 || at.CPUs != 9 || at.MemBytes != 62.5e9 {
		t.Errorf("res18 CPUs %v memory %v, rate read at %+v", res18.CPUs, res18.MemBytes, at)
	}
	if gnmt.Choice == nil || gnmt.Type != "v100" || gnmt.Source != "throughputs" || !strings.Contains(gnmt.TypeReason, "3.00× the k80 rate") {
		t.Errorf("gnmt: %s", out)
	}
	if w := res.Waiting[0]; w.Choice == nil || !strings.Contains(w.TypeReason, "no type has 8 free GPUs") {
		t.Errorf("lstm: %s", out)
	}
	table, _, err := runCLI(t, "schedule", "--cluster", cluster, "zoo:res18:gpus=2")
	// The joint rule reads each type's rate at what TUNE gives res18 there:
	// 6 CPUs per GPU on the empty V100 servers (0.729 of its ideal), its
	// ideal 9 on the K80s (1): 1/0.729 = 1.37×, not the 2.40× the two
	// types' shares (3 and 12 CPUs per GPU) would say.
	for _, want := range []string{"GPU type", "type: job 0 (res18) → k80 (rates from profile): 1.37× the v100 rate",
		"rate per type at CPUs, GB per GPU: v100 0.729 at 6, 62.50; k80 1 at 9, 62.50", "│     k-0×2 │      k80 │    2 │   18 │"} {
		if err != nil || !strings.Contains(table, want) {
			t.Errorf("table (%v) lacks %q:\n%s", err, want, table)
		}
	}
}

func TestScheduleTypedBadThroughputs(t *testing.T) {
	cluster := writeFile(t, "mixed.json", mixedCluster)
	thr := writeFile(t, "thr.json", `{"v100": {"('gnmt', 1)": {"null": 9}}, "k80": {"('res18', 1)": {"null": 3}}}`)
	_, _, err := runCLI(t, "schedule", "--cluster", cluster, "--throughputs", thr, "zoo:gnmt")
	if err == nil || !strings.Contains(err.Error(), "--throughputs") || !strings.Contains(err.Error(), `('gnmt', 1) on "k80"`) {
		t.Errorf("missing entry: %v", err)
	}
	_, _, err = runCLI(t, "schedule", "--cluster", "default", "--throughputs", thr, "zoo:gnmt")
	if err == nil || !strings.Contains(err.Error(), "--throughputs: cluster default has no two GPU types") {
		t.Errorf("untyped cluster: %v", err)
	}
}

// TestScheduleTypedProfile: a profile job on a typed cluster reads its
// rates from its matrix, and is placed on one type's servers only.
func TestScheduleTypedProfile(t *testing.T) {
	cluster := writeFile(t, "mixed.json", mixedCluster)
	out, stderr, err := runCLI(t, "schedule", "--cluster", cluster, "--json", goldenProfile+":gpus=2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res scheduleResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Placements) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	p := res.Placements[0]
	if p.Choice == nil || p.Source != "profile" || len(p.Rates) != 2 {
		t.Fatalf("%s", out)
	}
	prefix := map[string]string{"v100": "v-", "k80": "k-"}[p.Type]
	for _, s := range p.Servers {
		if prefix == "" || !strings.HasPrefix(s.Server, prefix) {
			t.Errorf("type %q but server %s", p.Type, s.Server)
		}
	}
}
