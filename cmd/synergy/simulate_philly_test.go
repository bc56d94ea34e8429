package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler/sim"
)

// phillyLog is the synthetic cluster_job_log of scheduler/sim's tests: nine
// jobs, of which four are usable single-GPU (three multi-GPU: one is 32 GPUs).
const phillyLog = "../../scheduler/sim/testdata/philly_cluster_job_log.json"

func TestSimulatePhilly_BadFlagsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, "t.csv", "0,alexnet,0,10,1\n")
	bad := writeFile(t, "bad.json", `[{"jobid": "a", "attempts": []}, {"jobid": "b", "submitted_time": "2017-10-03 10:00:00", "attempts": [{"start_time": "2017-13-03 10:00:00", "end_time": "2017-10-03 12:00:00", "detail": []}]}]`)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--philly", phillyLog, "--trace", trace}, "--philly: cannot be used with --trace"},
		{[]string{"--philly-arrivals"}, "--philly-arrivals: needs --philly"},
		{[]string{"--philly", filepath.Join(dir, "none.json")}, "--philly: read philly trace:"},
		{[]string{"--philly", bad}, "--philly: " + bad + ": philly: job 1 (b): attempts[0].start_time"},
		{[]string{"--philly", phillyLog, "--split", "20,70,20"}, "--split: split = [20 70 20]"},
		{[]string{"--philly-durations", "log"}, "--philly-durations: needs --philly"},
		{[]string{"--philly", phillyLog, "--philly-durations", "trace"}, "--philly-durations: \"trace\" is neither gavel nor log"},
	}
	for _, c := range cases {
		err := runSimulateArgs(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestSimulatePhilly_LogArrivals replays the log's own submission times with
// its GPU counts (Synergy's --philly_arrival --multigpu): three usable jobs,
// in submission order, classes by the split, iterations from durations.
func TestSimulatePhilly_LogArrivals(t *testing.T) {
	out := filepath.Join(t.TempDir(), "philly.json")
	if err := runSimulateArgs(t, "--philly", phillyLog, "--philly-arrivals", "--multi-gpu", "--strategies", "fair,tune", "--out", out); err != nil {
		t.Fatal(err)
	}
	var res sim.SweepResult
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want fair and tune", len(res.Runs))
	}
	for _, r := range res.Runs {
		x := r.Result
		if !strings.HasPrefix(x.Workload, "philly: 3 jobs, trace arrivals") || !x.Window.IsAll() || x.JCT.N != 3 {
			t.Fatalf("%s: workload %q, window %+v, %d jobs", r.Point.Strategy, x.Workload, x.Window, x.JCT.N)
		}
		want := []struct {
			model    string
			gpus     int
			arrivalS float64
		}{
			{"alexnet", 4, 0},        // application_1_0002, submitted first (09:00), last attempt on 4 GPUs
			{"gnmt", 1, 3600},        // application_1_0001, 10:00
			{"transformer", 1, 7200}, // application_1_0007, 11:00, 3 GPUs become 1
		}
		for i, w := range want {
			j := x.Jobs[i]
			if j.ID != i || j.Model != w.model || j.GPUs != w.gpus || j.ArrivalS != w.arrivalS {
				t.Errorf("%s: job %d = %+v, want %+v", r.Point.Strategy, i, j, w)
			}
		}
		if r.Point.Strategy == "fair" {
			// alexnet at fair share: 7200 s / 0.6 s = 12000 iterations,
			// floor(300/0.6) = 500 per round: 24 rounds from t=0 = 7200 s.
			if *x.Jobs[0].FinishS != 7200 {
				t.Errorf("fair: alexnet finished at %v s, want 7200", *x.Jobs[0].FinishS)
			}
		}
	}
}

// TestSimulatePhilly_PoissonArrivals draws Poisson arrivals over the log
// with the log's durations (Synergy's --no_exp without --philly_arrival):
// job i takes entry i mod 4 of the usable single-GPU jobs; the same flags
// give the same file. By default (Synergy's default) durations are
// re-drawn Gavel-like instead.
func TestSimulatePhilly_PoissonArrivals(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "jobs.csv")
	run := func(name string, extra ...string) []byte {
		path := filepath.Join(dir, name)
		args := append([]string{"--philly", phillyLog, "--loads", "6", "--seed", "3", "--num-jobs", "10", "--window", "all", "--strategies", "tune", "--out", path}, extra...)
		if err := runSimulateArgs(t, args...); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := run("a.json", "--philly-durations", "log", "--record-trace", trace)
	if b := run("b.json", "--philly-durations", "log"); !bytes.Equal(a, b) {
		t.Error("same flags, different result files")
	}
	if !bytes.Contains(a, []byte(`"workload": "philly: 4 jobs, 6 jobs/h, log durations`)) {
		t.Error("the result does not say the workload is the Philly log with its durations")
	}
	if g := run("gavel.json"); bytes.Equal(a, g) || !bytes.Contains(g, []byte(`"workload": "philly: 4 jobs, 6 jobs/h, Gavel-like durations`)) {
		t.Error("by default durations are not re-drawn")
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d jobs recorded, want 10", len(lines))
	}
	durationsS := []float64{7200, 7200, 3600, 7200} // usable jobs in file order
	last := 0.0
	for i, line := range lines {
		f := strings.Split(line, ",")
		m, err := zoo.Lookup(f[1])
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		arr, _ := strconv.ParseFloat(f[2], 64)
		iters, _ := strconv.ParseInt(f[3], 10, 64)
		if want := int64(durationsS[i%4] / m.IterSeconds); iters != want || f[4] != "1" {
			t.Errorf("line %d %q: iterations %d GPUs %s, want %d and 1", i+1, line, iters, f[4], want)
		}
		if arr <= last || arr != math.Ceil(arr) {
			t.Errorf("line %d: arrival %v after %v: want whole seconds, increasing", i+1, arr, last)
		}
		last = arr
	}
}
