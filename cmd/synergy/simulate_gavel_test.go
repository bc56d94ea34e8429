package main

import (
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
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
		"--plot-allocation: typed runs record no allocation":                          {"--gavel-trace", static, "--throughputs", tp, "--plot-allocation", filepath.Join(dir, "alloc.png")},
	}
	for want, args := range cases {
		_, _, err := runCLI(t, append([]string{"simulate"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want it to contain %q", args, err, want)
		}
	}
}

// gavelProfile saves the demo profile (synthtrain, batch 16, 1 GPU) as
// measured on gpuType at speed × its rates.
func gavelProfile(t *testing.T, dir, gpuType string, speed float64, mode string) string {
	t.Helper()
	p := sensitivitytest.Demo(dir)
	p.GPU.Type, p.GPU.Mode = gpuType, mode
	for i := range p.Cells {
		p.Cells[i].SamplesPerS *= speed
		p.Cells[i].SamplesPerSCI95 *= speed
	}
	p.StepOnly.SamplesPerS *= speed
	path := filepath.Join(dir, gpuType+".json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Rows from profiles drive Gavel mode: a job alone on a v100 + k80 cluster
// runs on the v100 at the v100 profile's rate (read at the default share,
// clamped to the demo's largest cell: 387.5 samples/s ÷ batch 16 = 24.22
// steps/s), and the results list the rows, the emulated one labelled.
func TestSimulateGavel_ThroughputsFromProfiles(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "profiles")
	os.Mkdir(pdir, 0o755)
	gavelProfile(t, pdir, "v100", 1, "emulated")
	k80 := gavelProfile(t, pdir, "k80", 0.25, "nvml")
	steps := 387.5 / 16 * 7200 // two hours on a v100
	trace := filepath.Join(dir, "one.trace")
	os.WriteFile(trace, []byte("synthtrain (batch size 16)\tpython3 x.py\tw\t--n\t0\t"+strconv.Itoa(int(steps))+"\t1\t1\t-1\t0\n"), 0o644)
	out, _, err := runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs-from-profiles", pdir,
		"--cluster-spec", "v100=1:k80=1", "--policies", "fifo_perf", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Runs []struct {
			Result struct {
				Jobs []struct {
					JCTS *float64 `json:"jct_s"`
				} `json:"jobs"`
			}
		}
		Rows []struct {
			GPUType   string  `json:"gpu_type"`
			Emulated  bool    `json:"emulated"`
			StepsPerS float64 `json:"steps_per_s"`
			File      string  `json:"file"`
		} `json:"throughputs_from_profiles"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Rows) != 2 || res.Rows[0].GPUType != "k80" || res.Rows[0].Emulated || res.Rows[0].File != k80 || res.Rows[1].GPUType != "v100" || !res.Rows[1].Emulated {
		t.Fatalf("rows = %+v, want k80 (measured, %s) then v100 (emulated)", res.Rows, k80)
	}
	if jct := res.Runs[0].Result.Jobs[0].JCTS; jct == nil || math.Abs(*jct-7200) > 360 {
		t.Errorf("JCT %v, want about 7200 s (the v100 row; on the k80 it would take 28800 s)", jct)
	}
	table, _, err := runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs-from-profiles", pdir,
		"--cluster-spec", "v100=1:k80=1", "--policies", "fifo_perf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "EMULATED") || !strings.Contains(table, "(batch size 16)") {
		t.Errorf("table does not list the rows with the emulated one labelled:\n%s", table)
	}
}

// Profiles complement Gavel's file: the file's job types and the profiled
// one run together; a profile of a type the file already gives is refused.
func TestSimulateGavel_ProfilesComplementTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, gt := range []string{"v100", "p100", "k80"} {
		gavelProfile(t, dir, gt, 1, "emulated")
	}
	syn := filepath.Join(gavelRef, "synthetic")
	b, err := os.ReadFile(filepath.Join(syn, "static.trace"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	trace := filepath.Join(dir, "mixed.trace")
	os.WriteFile(trace, []byte(first+"\nsynthtrain (batch size 16)\tpython3 x.py\tw\t--n\t0\t50000\t1\t1\t-1\t0\n"), 0o644)
	tp := filepath.Join(syn, "throughputs.json")
	out, _, err := runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs", tp, "--throughputs-from-profiles", dir,
		"--cluster-spec", "8:16:24", "--policies", "max_min_fairness_perf", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"num_finished": 2`) {
		t.Errorf("both jobs should finish:\n%s", out)
	}
	// The synthetic file's own job type, given again by a profile.
	name, _, _ := strings.Cut(first, " (batch size")
	p := sensitivitytest.Demo(dir)
	p.GPU.Type, p.Job.Name, p.Job.Batch = "v100", name, 20
	clash := filepath.Join(dir, "clash", "p.json")
	os.MkdirAll(filepath.Dir(clash), 0o755)
	if err := p.Save(clash); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs", tp, "--throughputs-from-profiles", clash, "--cluster-spec", "8:16:24")
	if err == nil || !strings.Contains(err.Error(), "--throughputs-from-profiles") || !strings.Contains(err.Error(), "throughputs file too") {
		t.Errorf("clash: %v, want an error naming the flag and the double entry", err)
	}
	_, _, err = runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs-from-profiles", dir+","+filepath.Join(dir, "v100.json"), "--cluster-spec", "8:16:24")
	if err == nil || !strings.Contains(err.Error(), "v100.json: gpu.type") {
		t.Errorf("one profile twice: %v, want it named with gpu.type", err)
	}
}

// The SLO cost variant from the CLI: it needs a price file, and with the
// generator's SLOs the results count the SLO jobs and violations (JSON)
// and the table shows them.
func TestSimulateGavel_CostSLOsCountViolations(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"types": {"v100": 3, "p100": 1.5, "k80": 0.2}}`), 0o644)
	tp := "../../scheduler/gavel/testdata/generator/throughputs.json"
	args := []string{"simulate", "--gavel-generate", "static", "--num-jobs", "12", "--slos", "--throughputs", tp, "--cluster-spec", "4:4:4",
		"--policies", "max_sum_throughput_normalized_by_cost_perf,max_sum_throughput_normalized_by_cost_perf_SLOs"}
	if _, _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "--prices: required by the policy max_sum_throughput_normalized_by_cost_perf") {
		t.Errorf("without prices: %v", err)
	}
	args = append(args, "--prices", prices)
	out, _, err := runCLI(t, append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Runs []struct {
			Result struct {
				Policy        string `json:"policy"`
				SLOJobs       int    `json:"slo_jobs"`
				SLOViolations int    `json:"slo_violations"`
				Jobs          []struct {
					FinishS   *float64 `json:"finish_s"`
					DeadlineS *float64 `json:"deadline_s"`
				} `json:"jobs"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Runs {
		late := 0
		for _, j := range r.Result.Jobs {
			if j.DeadlineS == nil {
				t.Fatalf("%s: a job without a deadline under --slos", r.Result.Policy)
			}
			if j.FinishS == nil || *j.FinishS > *j.DeadlineS {
				late++
			}
		}
		if r.Result.SLOJobs != 12 || r.Result.SLOViolations != late {
			t.Errorf("%s: slo_jobs %d, slo_violations %d; want 12 and %d (jobs finished after their deadline)", r.Result.Policy, r.Result.SLOJobs, r.Result.SLOViolations, late)
		}
	}
	table, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "SLO viol.") || !strings.Contains(table, "/12") {
		t.Errorf("table has no SLO column:\n%s", table)
	}
}

// TestSimulateGavel_ProfilingFractionEstimatesPairs: with
// --gavel-profiling-fraction, a packing policy sees pair throughputs from
// Gavel's throughput estimator instead of the file's (the pairs still run
// at the file's), so its schedule changes; without it, it sees the file's.
// The trace is the synthetic one's first 40 single-GPU jobs of the types
// that run on every GPU type (the estimator's references are such types).
func TestSimulateGavel_ProfilingFractionEstimatesPairs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(gavelRef, "synthetic", "continuous.trace"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(l, "\t"); len(lines) < 40 && f[6] == "1" && !strings.Contains(f[0], "cnn-l") {
			lines = append(lines, l)
		}
	}
	trace := filepath.Join(t.TempDir(), "sf1.trace")
	if err := os.WriteFile(trace, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mean := func(extra ...string) float64 {
		t.Helper()
		out, _, err := runCLI(t, append([]string{"simulate", "--gavel-trace", trace, "--throughputs", filepath.Join(gavelRef, "synthetic", "throughputs.json"),
			"--cluster-spec", "4:4:4", "--policies", "max_min_fairness_packed", "--json"}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Runs []struct {
				Result struct {
					NumFinished int     `json:"num_finished"`
					MeanJCTS    float64 `json:"mean_jct_s"`
				} `json:"result"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Runs) != 1 || r.Runs[0].Result.NumFinished != 40 {
			t.Fatalf("%v: %v, %+v", extra, err, r)
		}
		return r.Runs[0].Result.MeanJCTS
	}
	known, estimated := mean(), mean("--gavel-profiling-fraction", "0.3")
	t.Logf("mean JCT with the file's pairs %.1f s, with estimated pairs %.1f s", known, estimated)
	if known == estimated {
		t.Error("the estimated pair throughputs did not reach the policy")
	}
	if _, _, err := runCLI(t, "simulate", "--gavel-trace", trace, "--throughputs", filepath.Join(gavelRef, "synthetic", "throughputs.json"),
		"--gavel-profiling-fraction", "1.5"); err == nil || !strings.Contains(err.Error(), "--gavel-profiling-fraction: 1.5: need a fraction above 0 and at most 1") {
		t.Errorf("--gavel-profiling-fraction 1.5: error %v", err)
	}
}
