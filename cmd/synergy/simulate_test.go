package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runSimulateArgs runs `synergy simulate` in this process (runCLI).
func runSimulateArgs(t *testing.T, args ...string) error {
	t.Helper()
	_, _, err := runCLI(t, append([]string{"simulate"}, args...)...)
	return err
}

func TestSimulate_BadFlagsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	badTrace := writeFile(t, "bad.csv", "0,alexnet,0,10,1\n1,alexnet,x,10,1\n")
	badCluster := writeFile(t, "c.json", "{\"servers\": [\n {\"gpus\": 8, \"cpus\": 0, \"mem_bytes\": 1}]}")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "nowhere"}, "--cluster: cluster \"nowhere\": neither a file nor a preset"},
		{[]string{"--cluster", badCluster}, "--cluster: " + badCluster + ": cluster: servers[0].cpus = 0"},
		{[]string{"--trace", badTrace}, "--trace: " + badTrace + ": trace line 2: arrival_seconds \"x\""},
		{[]string{"--loads", "9,-1"}, "--loads: \"-1\" is not a positive number"},
		{[]string{"--split", "20,70"}, "--split: 2 values"},
		{[]string{"--split", "20,70,20"}, "--split: split = [20 70 20]: percentages sum to 110"},
		{[]string{"--seed", "one"}, "--seed: \"one\""},
		{[]string{"--window", "5-2"}, "--window: \"5-2\""},
		{[]string{"--strategies", "fair,best"}, "--strategies: unknown strategy \"best\""},
		{[]string{"--policies", "lifo"}, "--policies: unknown policy \"lifo\""},
		{[]string{"--round", "0s"}, "--round: 0s"},
		{[]string{"--record-trace", "x.csv", "--seed", "1,2"}, "--record-trace: needs the generator with a single"},
		{[]string{"--workers", "0"}, "--workers: 0"},
		{[]string{"--profile", filepath.Join(dir, "none.json")}, "--profile:"},
	}
	for _, c := range cases {
		err := runSimulateArgs(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestSimulate_SameFlagsSameFile runs a small sweep twice, with different
// worker counts, and demands identical result files; it also records the
// generator's jobs and replays them.
func TestSimulate_SameFlagsSameFile(t *testing.T) {
	dir := t.TempDir()
	out := func(name string, workers string) []byte {
		path := filepath.Join(dir, name)
		if err := runSimulateArgs(t, "--loads", "6,9", "--num-jobs", "300", "--window", "100-199", "--seed", "4",
			"--strategies", "fair,tune", "--policies", "fifo,las", "--workers", workers, "--out", path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := out("a.json", "1"), out("b.json", "4")
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte(`"strategy": "tune"`)) {
		t.Fatal("results differ between runs (or lack the tune runs)")
	}
	trace := filepath.Join(dir, "jobs.csv")
	if err := runSimulateArgs(t, "--num-jobs", "50", "--seed", "2", "--strategies", "tune", "--record-trace", trace, "--window", "all", "--out", filepath.Join(dir, "gen.json")); err != nil {
		t.Fatal(err)
	}
	if err := runSimulateArgs(t, "--trace", trace, "--strategies", "tune", "--out", filepath.Join(dir, "replay.json")); err != nil {
		t.Fatal(err)
	}
	gen, _ := os.ReadFile(filepath.Join(dir, "gen.json"))
	replay, _ := os.ReadFile(filepath.Join(dir, "replay.json"))
	// Same jobs, same rounds: the same JCT summary (the workload line differs).
	jct := func(b []byte) string {
		i := bytes.Index(b, []byte(`"jct"`))
		j := bytes.Index(b, []byte(`"queueing_delay"`))
		if i < 0 || j < i {
			t.Fatalf("no jct in %s", b)
		}
		return string(b[i:j])
	}
	if jct(gen) != jct(replay) {
		t.Errorf("recorded and replayed runs differ:\n%s\n%s", jct(gen), jct(replay))
	}
}
