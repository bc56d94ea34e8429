package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	headerTwice := writeFile(t, "h.csv", "job_id,model,arrival_s,iterations,gpus\njob_id,model,arrival_s,iterations,gpus\n")
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
		{[]string{"--workers", "5000"}, "--workers: 5000: need 1 to 1024"},
		{[]string{"--num-jobs", "1000000000"}, "--num-jobs: 1000000000 is above 10000000, the most jobs one simulation runs"},
		{[]string{"--loads", "9,1e7"}, "--loads: 1e+07 jobs per hour is above 100000"},
		{[]string{"--round", "100ms"}, "--round: 100ms is outside 1s to 168h0m0s"},
		{[]string{"--seed", seeds(10001)}, "--seed: the sweep has 20002 runs (--strategies × --policies × --loads × --seed), above 10000"},
		{[]string{"--trace", headerTwice}, "--trace: " + headerTwice + ": trace line 2: job_id \"job_id\" is not a non-negative integer"},
		{[]string{"--profile", filepath.Join(dir, "none.json")}, "--profile:"},
		{[]string{"--static"}, "--static: replays a recorded trace: give --trace"},
		{[]string{"--window", "all"}, "--window: all: the generator (or --philly at Poisson arrivals) never stops drawing jobs; give FIRST-LAST or --num-jobs N"},
	}
	for _, c := range cases {
		err := runSimulateArgs(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestSimulate_StaticStartsAtOneSecond replays a two-job trace arriving at
// 0 and 0.5 s with --static: both run in the first round, at t = 1 s, as
// the original's --static does; without it the second waits for t = 300 s.
func TestSimulate_StaticStartsAtOneSecond(t *testing.T) {
	trace := writeFile(t, "s.csv", "0,res18,0,1000,1\n1,res18,0.5,1000,1\n")
	starts := func(extra ...string) []float64 {
		path := filepath.Join(t.TempDir(), "r.json")
		args := append([]string{"--trace", trace, "--strategies", "fair", "--out", path}, extra...)
		if err := runSimulateArgs(t, args...); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Runs []struct {
				Result struct {
					Jobs []struct {
						StartS float64 `json:"start_s"`
					} `json:"jobs"`
				} `json:"result"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Runs) != 1 || len(out.Runs[0].Result.Jobs) != 2 {
			t.Fatalf("results %s: %v", b, err)
		}
		return []float64{out.Runs[0].Result.Jobs[0].StartS, out.Runs[0].Result.Jobs[1].StartS}
	}
	if got := starts("--static"); got[0] != 1 || got[1] != 1 {
		t.Errorf("--static: jobs started at %v s, want both at 1 s", got)
	}
	if got := starts(); got[0] != 0 || got[1] != 300 {
		t.Errorf("no --static: jobs started at %v s, want 0 and 300 s", got)
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
		j := bytes.Index(b, []byte(`"mean_jct_s"`))
		if i < 0 || j < i {
			t.Fatalf("no jct in %s", b)
		}
		return string(b[i:j])
	}
	if jct(gen) != jct(replay) {
		t.Errorf("recorded and replayed runs differ:\n%s\n%s", jct(gen), jct(replay))
	}
}

func seeds(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return strings.Join(s, ",")
}

// A trace with a header row is read (the header recognised and skipped).
func TestSimulate_TraceHeaderAccepted(t *testing.T) {
	trace := writeFile(t, "h.csv", "job_id,model,arrival_s,iterations,gpus\n0,res18,0,1000,1\n1,lstm,10,1000,1\n")
	stdout, _, err := runCLI(t, "simulate", "--trace", trace, "--strategies", "fair", "--json")
	if err != nil || !strings.Contains(stdout, `"runs"`) {
		t.Fatalf("a trace with a header: %v\n%s", err, stdout)
	}
}

// Cancelled (Ctrl-C, SIGTERM) while its runs are under way, simulate
// returns saying so, prints the runs that finished and writes no file; a
// sweep of a 2-million-job workload would otherwise run for hours.
func TestSimulate_InterruptedReturns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := newApp()
	var stdout, stderr bytes.Buffer
	app.Writer, app.ErrWriter = &stdout, &stderr
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, []string{"synergy", "simulate", "--num-jobs", "2000000", "--loads", "10000", "--window", "all",
			"--strategies", "fair,tune", "--workers", "1", "--out", out})
	}()
	time.Sleep(500 * time.Millisecond) // under way: no run of 2 million jobs ends this soon
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // a watchdog, not a timing: without the fix it runs for hours
		t.Fatal("simulate did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "0 of 2 runs finished") {
		t.Errorf("err = %v, want interrupted with context.Canceled and the runs finished", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("an interrupted sweep wrote %s (%v)", out, serr)
	}
}
