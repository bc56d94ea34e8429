package main

import (
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const gavelRef = "../../scheduler/gavel/testdata/reference"

// The interface the checks use: Gavel's trace and throughputs as they
// are, per-job id, arrival_s and finish_s in the results JSON, compared
// with Gavel's own simulator's results for the same inputs.
func TestSimulateGavel_TraceMatchesReference(t *testing.T) {
	syn := filepath.Join(gavelRef, "synthetic")
	out, _, err := runCLI(t, "simulate", "--gavel-trace", filepath.Join(syn, "static.trace"), "--throughputs", filepath.Join(syn, "throughputs.json"),
		"--cluster-spec", "8:16:24", "--policies", "fifo_perf,isolated", "--window", "all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Runs []struct {
			Point  struct{ Policy string }
			Result struct {
				Jobs []struct {
					ID       int      `json:"id"`
					ArrivalS float64  `json:"arrival_s"`
					FinishS  *float64 `json:"finish_s"`
				} `json:"jobs"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	for _, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(syn, "static", r.Point.Policy+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Jobs []struct {
				ID      int     `json:"id"`
				FinishS float64 `json:"finish_s"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		if len(ref.Jobs) != len(r.Result.Jobs) {
			t.Fatalf("%s: %d jobs, Gavel %d", r.Point.Policy, len(r.Result.Jobs), len(ref.Jobs))
		}
		for i, j := range r.Result.Jobs {
			if j.ID != i || j.FinishS == nil || math.Abs(*j.FinishS-ref.Jobs[i].FinishS) > 2 {
				t.Fatalf("%s: job %d: %+v, Gavel finish %v", r.Point.Policy, i, j, ref.Jobs[i].FinishS)
			}
		}
	}
}

func TestSimulateGavel_SameSeedSameBytes(t *testing.T) {
	args := []string{"simulate", "--gavel-generate", "static", "--num-jobs", "40", "--multi-gpu", "--priorities",
		"--throughputs", "../../scheduler/gavel/testdata/generator/throughputs.json", "--cluster-spec", "8:8:16",
		"--policies", "fifo,fifo_perf,isolated", "--seed", "3", "--json", "--workers", "3"}
	a, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.Contains(a, `"finish_s"`) {
		t.Fatal("two runs with the same seed differ")
	}
	rec := filepath.Join(t.TempDir(), "gen.trace")
	if _, _, err := runCLI(t, append(args[:len(args)-5:len(args)-5], "--seed", "3", "--gavel-record-trace", rec)...); err != nil {
		t.Fatal(err)
	}
	c, _, err := runCLI(t, "simulate", "--gavel-trace", rec, "--throughputs", "../../scheduler/gavel/testdata/generator/throughputs.json",
		"--cluster-spec", "8:8:16", "--policies", "fifo_perf", "--json")
	if err != nil || !strings.Contains(c, `"num_jobs": 40`) {
		t.Fatalf("replaying the recorded trace: %v", err)
	}
}

// TestSimulateGavel_PlotDrawsTheJCTCDF: --plot in Gavel mode writes the
// JCT CDF of every run (a PNG that decodes, with content).
func TestSimulateGavel_PlotDrawsTheJCTCDF(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cdf.png")
	if _, _, err := runCLI(t, "simulate", "--gavel-trace", filepath.Join(gavelRef, "synthetic", "static.trace"),
		"--throughputs", filepath.Join(gavelRef, "synthetic", "throughputs.json"), "--policies", "fifo,max_min_fairness_perf", "--plot", out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("the plot is not a drawn PNG: %v", err)
	}
}

func TestSimulateGavel_BadInputNamesFlagAndLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.trace")
	os.WriteFile(bad, []byte("A\tc\tw\t--n\t0\t100\t1\t1\t-1\t0\nA\tc\tw\t--n\t0\tmany\t1\t1\t-1\t5\n"), 0o644)
	tp := filepath.Join(gavelRef, "synthetic", "throughputs.json")
	static := filepath.Join(gavelRef, "synthetic", "static.trace")
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"types": {"v100": 2.48, "p100": 1.46}}`), 0o644)
	cases := map[string][]string{
		"--prices: required by the policy max_sum_throughput_normalized_by_cost_perf": {"--gavel-trace", static, "--throughputs", tp, "--policies", "max_sum_throughput_normalized_by_cost_perf"},
		"--prices: " + prices + ": prices: types: no price for k80":                   {"--gavel-trace", static, "--throughputs", tp, "--prices", prices},
		"--prices: cannot be used with --ideal":                                       {"--gavel-trace", static, "--throughputs", tp, "--prices", prices, "--ideal"},
		"--gavel-trace: " + bad + ": line 2":                                          {"--gavel-trace", bad, "--throughputs", tp},
		"--throughputs: required":                                                     {"--gavel-trace", bad},
		"--cluster-spec":                                                              {"--gavel-trace", filepath.Join(gavelRef, "synthetic", "static.trace"), "--throughputs", tp, "--cluster-spec", "1:2"},
		"--policies":                                                                  {"--gavel-trace", filepath.Join(gavelRef, "synthetic", "static.trace"), "--throughputs", tp, "--policies", "lottery"},
		"--gavel-generate":                                                            {"--gavel-generate", "bursty", "--throughputs", tp},
		"--num-jobs":                                                                  {"--gavel-generate", "static", "--throughputs", tp},
		"--plot: ":                                                                    {"--gavel-trace", filepath.Join(gavelRef, "synthetic", "static.trace"), "--throughputs", tp, "--plot", filepath.Join(dir, "cdf.bmp")},
	}
	for want, args := range cases {
		_, _, err := runCLI(t, append([]string{"simulate"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want it to contain %q", args, err, want)
		}
	}
}
