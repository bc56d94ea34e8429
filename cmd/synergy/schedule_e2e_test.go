package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goldenProfile = "../../sensitivity/testdata/profile_v1.golden.json"

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScheduleE2E_DemoProfile is the Makefile demo: a profile measured on a
// 2-core machine, placed on the default cluster, with the range warning.
func TestScheduleE2E_DemoProfile(t *testing.T) {
	out, stderr, err := runCLI(t, "schedule", "--cluster", "default", goldenProfile)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		"GPU-proportional share 3 CPUs and 62.50 GB per GPU",
		"warning: job 0 (synthtrain): profiled with 1–2 CPUs per GPU, but this cluster's GPU-proportional share is 3 CPUs per GPU",
		"synthtrain", "server-0×1", "ideal demand",
		// the ideal and why: 1 CPU (90, 100 ±1.5) is far below 95 % of 190,
		// and 2 CPUs at 128 MiB failed
		"ideal per GPU: job 0 (synthtrain): 2 CPUs, 25.77 GB: 1 CPU (at its best memory) reads 47 % slower than the best (beyond their ±2.4 %); 0.1342 GB reads 0 samples/s (a failed point); 1.00× the share's 190 samples/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "waiting:") {
		t.Errorf("a lone job waits on an empty cluster:\n%s", out)
	}
}

func TestScheduleE2E_JSONPlacementAgainstFairShare(t *testing.T) {
	// 2 servers × (4 GPUs, 12 CPUs, 250 GB): fair share 3 CPUs, 62.5 GB.
	cluster := writeFile(t, "cluster.json", `{"name": "lab", "groups": [{"count": 2, "gpus": 4, "cpus": 12, "mem_bytes": 250000000000}]}`)
	for _, strategy := range []string{"tune", "opt", "drf+tune", "tetris+tune", "fair"} {
		t.Run(strategy, func(t *testing.T) {
			out, stderr, err := runCLI(t, "schedule", "--cluster", cluster, "--strategy", strategy, "--json",
				goldenProfile+":gpus=2", "zoo:res18", "zoo:alexnet:gpus=4", "zoo:gnmt")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var res scheduleResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if res.Strategy != strategy || res.FairShare.CPUs != 3 || res.FairShare.MemBytes != 62.5e9 {
				t.Errorf("header %+v", res)
			}
			if len(res.Placements)+len(res.Waiting) != 4 {
				t.Fatalf("%d placed + %d waiting, want 4 jobs", len(res.Placements), len(res.Waiting))
			}
			if len(res.Waiting) != 0 {
				t.Errorf("waiting on a cluster with room: %+v", res.Waiting)
			}
			used := map[string][3]float64{}
			for _, p := range res.Placements {
				// fair = GPUs × (3 CPUs, 62.5 GB)
				if p.FairCPUs != 3*float64(p.GPUs) || p.FairMemBytes != 62.5e9*float64(p.GPUs) {
					t.Errorf("job %d fair share %v CPUs %v bytes for %d GPUs", p.Job, p.FairCPUs, p.FairMemBytes, p.GPUs)
				}
				if strategy == "fair" && (p.CPUs != p.FairCPUs || p.Speedup != 1) {
					t.Errorf("fair gave job %d %v CPUs at %v×", p.Job, p.CPUs, p.Speedup)
				}
				if strategy != "fair" && p.Speedup < 1 {
					t.Errorf("%s: job %d below fair share: %v×", strategy, p.Job, p.Speedup)
				}
				// every job says what its ideal is and why
				if zoo := strings.HasPrefix(p.Arg, "zoo:"); p.Ideal == "" || zoo != strings.Contains(p.Ideal, "the model zoo's table") {
					t.Errorf("job %d (%s): ideal %q", p.Job, p.Arg, p.Ideal)
				}
				gpus := 0
				for _, s := range p.Servers {
					u := used[s.Server]
					used[s.Server] = [3]float64{u[0] + float64(s.GPUs), u[1] + s.CPUs, u[2] + s.MemBytes}
					gpus += s.GPUs
				}
				if gpus != p.GPUs {
					t.Errorf("job %d: %d GPUs over its servers, %d asked", p.Job, gpus, p.GPUs)
				}
			}
			for s, u := range used {
				if u[0] > 4 || u[1] > 12+1e-9 || u[2] > 250e9 {
					t.Errorf("%s over capacity: %v", s, u)
				}
			}
			// TUNE: res18 first got its ideal 9 CPUs, then was reverted to
			// 3 to make room for alexnet×4 (12 CPUs on one server).
			if strategy == "tune" && (res.Placements[1].CPUs != 3 || !strings.Contains(res.Placements[1].Note, "reverted")) {
				t.Errorf("tune: res18 %+v", res.Placements[1])
			}
		})
	}
}

func TestScheduleE2E_WaitingReasons(t *testing.T) {
	cluster := writeFile(t, "one.json", `{"servers": [{"name": "box", "gpus": 2, "cpus": 6, "mem_bytes": 250000000000}]}`)
	used := writeFile(t, "used.json", `{"servers": [{"server": "box", "gpus": 1, "cpus": 2, "mem_bytes": 0}]}`)
	// Free: 1 GPU, 4 CPUs. Greedy wants res18's ideal capped at the
	// server's 6 CPUs: "cpu: need 6, free 4 on box". gnmt×2 needs 2 GPUs.
	out, stderr, err := runCLI(t, "schedule", "--cluster", cluster, "--used", used, "--strategy", "greedy", "zoo:res18", "zoo:gnmt:gpus=2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{
		"no job placed",
		"waiting: job 0 (res18, 1 GPUs): ideal demand did not fit: cpu: need 6, free 4 on box",
		"waiting: job 1 (gnmt, 2 GPUs): waiting: gpu: need 2, free 1 in the cluster",
		"ideal per GPU: job 0 (res18): 9 CPUs, 62.50 GB: the model zoo's table (no noise to read through), 2.40× the share",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Tune drops res18 to its fair share (3 CPUs) and places it.
	out, _, err = runCLI(t, "schedule", "--cluster", cluster, "--used", used, "zoo:res18")
	if err != nil || !strings.Contains(out, "dropped to fair share") {
		t.Errorf("tune: %v\n%s", err, out)
	}
}

func TestScheduleE2E_BadInputNamesTheFlag(t *testing.T) {
	badUsed := writeFile(t, "used.json", `{"servers": [{"server": "server-99", "gpus": 1}]}`)
	overUsed := writeFile(t, "over.json", `{"servers": [{"server": "server-0", "gpus": 9}]}`)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "best"}, "--strategy: unknown strategy \"best\""},
		{[]string{"--policy", "lifo", "zoo:res18"}, "--policy: unknown policy \"lifo\""},
		{[]string{"--cluster", "nowhere"}, "--cluster: cluster \"nowhere\": neither a file nor a preset"},
		{[]string{"zoo:res18:gpus=0"}, "gpus=0 is not a positive integer"},
		{[]string{"zoo:resnet"}, "zoo: no model \"resnet\""},
		{[]string{"/nonexistent/profile.json"}, "job 0"},
		{[]string{"--used", badUsed, "zoo:res18"}, `--used: ` + badUsed + `: servers[0].server = "server-99": no such server`},
		{[]string{"--used", overUsed, "zoo:res18"}, "--used: " + overUsed + ": servers[0]: reserve job -1: gpu: need 9, free 8 on server-0"},
		{nil, "no jobs given"},
	}
	for _, c := range cases {
		_, _, err := runCLI(t, append([]string{"schedule"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v; want %q", c.args, err, c.want)
		}
	}
}

// TestSimulateE2E_NewStrategiesAndPlot runs the strategies of this part by
// name through `synergy simulate` and draws the CDF.
func TestSimulateE2E_NewStrategiesAndPlot(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "cdf.svg")
	out, stderr, err := runCLI(t, "simulate", "--strategies", "opt,drf,drf+tune,tetris,tetris+tune", "--policies", "fifo",
		"--loads", "6", "--num-jobs", "60", "--window", "all", "--workers", "2", "--plot", svg)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// Progress goes to the error writer, one line per run off a terminal.
	if !strings.Contains(stderr, "] 5/5 runs") || strings.Contains(out, "runs,") {
		t.Errorf("progress not on the error writer:\nstdout %s\nstderr %s", out, stderr)
	}
	for _, name := range []string{"opt", "drf+tune", "tetris+tune"} {
		if !strings.Contains(out, " "+name+" ") {
			t.Errorf("table lacks %s:\n%s", name, out)
		}
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "<?xml") || !strings.Contains(string(data), "tetris+tune+fifo") {
		t.Errorf("plot is not an SVG naming the runs: %.80q", data)
	}
	if _, _, err := runCLI(t, "simulate", "--plot", "cdf.gif"); err == nil || !strings.Contains(err.Error(), "--plot: cdf.gif: unknown plot format") {
		t.Errorf("bad --plot: %v", err)
	}
	if _, _, err := runCLI(t, "simulate", "--plot-allocation", "alloc"); err == nil || !strings.Contains(err.Error(), "--plot-allocation: alloc: no extension") {
		t.Errorf("bad --plot-allocation: %v", err)
	}
	if _, _, err := runCLI(t, "simulate", "--plot", "a.png", "--plot-allocation", "./a.png"); err == nil || !strings.Contains(err.Error(), "--plot-allocation: ./a.png is --plot's file too") {
		t.Errorf("--plot-allocation on --plot's file: %v", err)
	}
}

// TestSimulateE2E_PlotAllocation draws each run's allocation over time to a
// file of its own, named by the run, and says where.
func TestSimulateE2E_PlotAllocation(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := runCLI(t, "simulate", "--strategies", "fair,tune", "--policies", "fifo",
		"--loads", "6", "--num-jobs", "60", "--window", "all", "--workers", "2", "--plot-allocation", filepath.Join(dir, "alloc.svg"))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var drawn []string
	for _, name := range []string{"alloc-fair-fifo.svg", "alloc-tune-fifo.svg"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v\nstderr: %s", err, stderr)
		}
		run := strings.TrimSuffix(strings.TrimPrefix(name, "alloc-"), "-fifo.svg") + "+fifo"
		if !strings.HasPrefix(string(data), "<?xml") || !strings.Contains(string(data), "Cluster allocation, "+run) {
			t.Errorf("%s is not an SVG naming its run %s: %.80q", name, run, data)
		}
		if !strings.Contains(stderr, path) {
			t.Errorf("stderr does not name %s:\n%s", path, stderr)
		}
		drawn = append(drawn, string(data))
	}
	if drawn[0] == drawn[1] {
		t.Error("fair and tune drew the same allocation")
	}
}
