package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

const genThroughputs = "../../scheduler/gavel/testdata/generator/throughputs.json"

// runCLIWithin runs the command line and fails the test (instead of
// hanging it) when it has not returned within d.
func runCLIWithin(t *testing.T, d time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	type out struct {
		o, e string
		err  error
	}
	ch := make(chan out, 1)
	go func() {
		o, e, err := runCLI(t, args...)
		ch <- out{o, e, err}
	}()
	select {
	case r := <-ch:
		return r.o, r.e, r.err
	case <-time.After(d):
		t.Fatalf("%v: still running after %v", args, d)
	}
	return "", "", context.DeadlineExceeded
}

// Issue 45's runs that never ended: Gavel's engine with --num-jobs N and a
// window reaching job N or later, continuous and static, on both engines.
// Each ends, warns that the window reaches past the jobs, and reports the
// window's jobs that exist; a window past every job is refused naming
// --window.
func TestSimulate_WindowPastNumJobsEnds(t *testing.T) {
	gavel := []string{"simulate", "--throughputs", genThroughputs, "--cluster-spec", "8:16:24", "--policies", "fifo_perf", "--num-jobs", "30", "--loads", "1"}
	synergy := []string{"simulate", "--strategies", "fair", "--num-jobs", "30", "--loads", "1"}
	for _, tc := range []struct {
		name string
		args []string
		want string // the finished column
	}{
		{"gavel continuous 0-99", append(gavel, "--gavel-generate", "continuous", "--window", "0-99"), "30/100"},
		{"gavel static 0-99", append(gavel, "--gavel-generate", "static", "--window", "0-99"), "30/100"},
		{"gavel continuous 25-40", append(gavel, "--gavel-generate", "continuous", "--window", "25-40"), "5/16"},
		{"gavel static 25-40", append(gavel, "--gavel-generate", "static", "--window", "25-40"), "5/16"},
		{"synergy 0-99", append(synergy, "--window", "0-99"), ""},
	} {
		out, errOut, err := runCLIWithin(t, 2*time.Minute, tc.args...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(errOut, "warning: --window") || !strings.Contains(errOut, "reaches past --num-jobs 30") {
			t.Errorf("%s: stderr %q, want the window warning", tc.name, errOut)
		}
		if tc.want != "" && !strings.Contains(out, tc.want) {
			t.Errorf("%s: table\n%s\nwant %s finished", tc.name, out, tc.want)
		}
	}
	for _, args := range [][]string{append(gavel, "--gavel-generate", "static", "--window", "30-40"), append(synergy, "--window", "30-40")} {
		if _, _, err := runCLIWithin(t, time.Minute, args...); err == nil || !strings.Contains(err.Error(), "--window: 30-40: --num-jobs 30 generates jobs 0-29 only") {
			t.Errorf("%v: %v, want --window refused", args, err)
		}
	}
}

// A generator that can draw a job no GPU type can run (8-GPU jobs with
// --multi-gpu on 2 GPUs a type) is refused before any run, naming
// --cluster-spec and the job type.
func TestSimulateGavel_UnrunnableGeneratedJobRefused(t *testing.T) {
	_, _, err := runCLIWithin(t, time.Minute, "simulate", "--gavel-generate", "static", "--throughputs", genThroughputs, "--cluster-spec", "2:2:2",
		"--multi-gpu", "--policies", "fifo_perf", "--num-jobs", "30")
	if err == nil || !strings.HasPrefix(err.Error(), "--cluster-spec: ") || !strings.Contains(err.Error(), "no GPU type of the cluster can run") {
		t.Errorf("%v, want --cluster-spec refusing the job type", err)
	}
}

// --max-hours bounds Synergy's engine as it does Gavel's: an overloaded
// run ends past the limit and the table says it was truncated.
func TestSimulate_MaxHoursBoundsSynergysEngine(t *testing.T) {
	out, _, err := runCLIWithin(t, 2*time.Minute, "simulate", "--strategies", "fair", "--num-jobs", "200", "--window", "0-199", "--loads", "60", "--max-hours", "2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "truncated at --max-hours") {
		t.Errorf("table\n%s\nwant the truncation note", out)
	}
	if _, _, err := runCLI(t, "simulate", "--max-hours", "-1"); err == nil || !strings.Contains(err.Error(), "--max-hours") {
		t.Errorf("--max-hours -1: %v, want it refused", err)
	}
}

// Issue 40's sizes, refused before any run naming the flag: a Gavel-mode
// cluster of 1e9 GPUs, 1e7 generated jobs, a window past every job a run
// can take; and results, plots or traces aimed into a directory that does
// not exist (which used to fail after the sweep and lose it).
func TestSimulate_SizesAndOutputsRefusedUpFront(t *testing.T) {
	missing := t.TempDir() + "/no/such/dir"
	gavel := []string{"simulate", "--gavel-generate", "static", "--throughputs", genThroughputs, "--policies", "fifo_perf", "--num-jobs", "30"}
	for want, args := range map[string][]string{
		"--cluster-spec: cluster spec: type \"v100\": 1000000000 GPUs": append(gavel, "--cluster-spec", "1000000000:1:1"),
		"--num-jobs: 10000000 is above 1000000":                        {"simulate", "--gavel-generate", "static", "--throughputs", genThroughputs, "--policies", "fifo_perf", "--num-jobs", "10000000"},
		"--window: \"0-2000000\" reaches job 2000000":                  {"simulate", "--gavel-generate", "continuous", "--throughputs", genThroughputs, "--policies", "fifo_perf", "--window", "0-2000000"},
		"--window: 0-20000000 reaches job 20000000":                    {"simulate", "--strategies", "fair", "--window", "0-20000000"},
		"--out: " + missing:                                            append(gavel, "--out", missing+"/r.json"),
		"--plot: " + missing:                                           append(gavel, "--plot", missing+"/cdf.png"),
		"--out: " + missing + "/r.json":                                {"simulate", "--strategies", "fair", "--num-jobs", "20", "--window", "0-19", "--out", missing + "/r.json"},
		"--plot-allocation: ":                                          {"simulate", "--strategies", "fair", "--num-jobs", "20", "--window", "0-19", "--plot-allocation", missing + "/a.png"},
		"--record-trace: ":                                             {"simulate", "--strategies", "fair", "--num-jobs", "20", "--window", "0-19", "--record-trace", missing + "/t.csv"},
	} {
		if _, _, err := runCLIWithin(t, time.Minute, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
}

// Issue 45 point 2: every flag acts or is refused before the first run,
// naming the flag and why.
func TestSimulate_IgnoredFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	trace := dir + "/t.csv"
	if err := os.WriteFile(trace, []byte("0,alexnet,0,100,1\n1,alexnet,10,100,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gtrace := filepath.Join(gavelRef, "synthetic", "static.trace")
	gtp := filepath.Join(gavelRef, "synthetic", "throughputs.json")
	gen := []string{"simulate", "--gavel-generate", "static", "--throughputs", genThroughputs, "--num-jobs", "20", "--cluster-spec", "8:16:24"}
	for want, args := range map[string][]string{
		"--sensitivity: ResNet18: no job type of the run":     append(gen, "--policies", "joint", "--sensitivity", "ResNet18=zoo:res18"),
		"--sensitivity: applies to typed runs":                {"simulate", "--strategies", "fair", "--num-jobs", "20", "--window", "0-19", "--sensitivity", "ResNet-50=zoo:res50"},
		"--throughputs: applies to typed runs":                {"simulate", "--strategies", "fair", "--num-jobs", "20", "--window", "0-19", "--throughputs", genThroughputs},
		"--loads: is ignored by a --trace replay":             {"simulate", "--trace", trace, "--loads", "3"},
		"--seed: is ignored by a --trace replay":              {"simulate", "--trace", trace, "--seed", "2"},
		"--multi-gpu: is ignored by a --trace replay":         {"simulate", "--trace", trace, "--multi-gpu"},
		"--loads: is ignored by a --gavel-trace replay":       {"simulate", "--gavel-trace", gtrace, "--throughputs", gtp, "--loads", "3"},
		"--split: applies to Synergy's engine only":           append(gen, "--policies", "fifo_perf", "--split", "30,60,10"),
		"--policies: gandiva co-locates jobs":                 append(gen, "--policies", "fifo_perf,gandiva", "--sensitivity", "ResNet-50=zoo:res50"),
		"--policies: max_min_fairness_packed co-locates jobs": append(gen, "--policies", "joint,max_min_fairness_packed"),
	} {
		if _, _, err := runCLIWithin(t, time.Minute, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
	// The same key spelled right is taken.
	if _, _, err := runCLIWithin(t, 2*time.Minute, append(gen, "--policies", "joint", "--sensitivity", "ResNet-50=zoo:res50")...); err != nil {
		t.Errorf("a valid --sensitivity: %v", err)
	}
}

// Servers of one GPU type that give their GPUs different CPUs or memory
// are averaged by a typed run: that is said, once per type; a uniform
// type says nothing.
func TestMixedShares_WarnsPerType(t *testing.T) {
	cl := scheduler.Cluster{Name: "mixed", Servers: []scheduler.Server{
		{Name: "a", GPUType: "v100", GPUs: 4, CPUs: 16, MemBytes: 256e9},
		{Name: "b", GPUType: "v100", GPUs: 4, CPUs: 32, MemBytes: 256e9},
		{Name: "c", GPUType: "v100", GPUs: 4, CPUs: 8, MemBytes: 256e9},
		{Name: "d", GPUType: "k80", GPUs: 2, CPUs: 8, MemBytes: 64e9},
		{Name: "e", GPUType: "k80", GPUs: 4, CPUs: 16, MemBytes: 128e9},
	}}
	w := mixedShares(cl)
	if len(w) != 1 || !strings.Contains(w[0], "v100 servers give their GPUs different CPUs") || !strings.Contains(w[0], "on b") {
		t.Errorf("warnings %q, want one for v100 naming server b", w)
	}
}

// Issue 45 point 5: rows say what ran. A Gavel trace's rows say trace
// (not 0 jobs/h); joint without --sensitivity does not claim tune; on
// servers of one GPU each a note says CPU- and memory-aware placement
// cannot differ there.
func TestSimulateGavel_LabelsSayWhatRan(t *testing.T) {
	gtrace := filepath.Join(gavelRef, "synthetic", "static.trace")
	gtp := filepath.Join(gavelRef, "synthetic", "throughputs.json")
	out, errOut, err := runCLIWithin(t, 2*time.Minute, "simulate", "--gavel-trace", gtrace, "--throughputs", gtp, "--policies", "joint,fifo_perf", "--cluster-spec", "8:16:24")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, " tune ") || !strings.Contains(out, "proportional (no --sensitivity)") {
		t.Errorf("table\n%s\nwant joint's placement as proportional, not tune", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "fifo_perf") && !strings.Contains(line, "trace") {
			t.Errorf("row %q: want its load column to say trace", line)
		}
	}
	if !strings.Contains(errOut, "every server holds one GPU") {
		t.Errorf("stderr %q: want the one-GPU-server note", errOut)
	}
	_, errOut, err = runCLIWithin(t, 2*time.Minute, "simulate", "--gavel-trace", gtrace, "--throughputs", gtp, "--policies", "joint", "--cluster-spec", "8:16:24", "--gpus-per-server", "4:4:4")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut, "every server holds one GPU") {
		t.Errorf("4-GPU servers: stderr %q, want no one-GPU note", errOut)
	}
}

// cancelOn is a stderr that cancels the run once a line holding mark is
// written (Ctrl-C at a known point of the sweep).
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(b, []byte(c.mark)) {
		c.cancel()
	}
	return c.buf.Write(b)
}

// Ctrl-C on a Gavel sweep prints the runs that finished (it printed
// nothing) and says it was interrupted; no results file is written.
func TestSimulateGavel_InterruptPrintsFinishedRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := newApp()
	var out bytes.Buffer
	errOut := &cancelOn{mark: "gavel: 1/3 runs", cancel: cancel}
	app.Writer, app.ErrWriter = &out, errOut
	res := filepath.Join(t.TempDir(), "r.json")
	err := app.Run(ctx, []string{"synergy", "simulate", "--gavel-generate", "continuous", "--throughputs", genThroughputs, "--cluster-spec", "8:16:24",
		"--policies", "fifo_perf,max_min_fairness,max_min_fairness_perf", "--window", "100-199", "--loads", "6", "--workers", "1", "--out", res})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("%v, want interrupted", err)
	}
	if !strings.Contains(out.String(), "fifo_perf") || !strings.Contains(errOut.buf.String(), "interrupted: the 1 of 3 runs that finished") {
		t.Errorf("stdout\n%s\nstderr\n%s\nwant the finished fifo_perf row printed", out.String(), errOut.buf.String())
	}
	if _, serr := os.Stat(res); serr == nil {
		t.Errorf("an interrupted sweep wrote %s", res)
	}
}
