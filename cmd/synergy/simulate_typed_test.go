package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const cpuPoorCluster = `{"name": "cpu-poor", "groups": [
 {"count": 2, "gpus": 4, "cpus": 12, "mem_bytes": 250000000000, "gpu_type": "v100"},
 {"count": 4, "gpus": 4, "cpus": 24, "mem_bytes": 500000000000, "gpu_type": "p100"},
 {"count": 6, "gpus": 4, "cpus": 48, "mem_bytes": 750000000000, "gpu_type": "k80"}]}`

// synthSensitivity gives the synthetic job types the zoo's matrices (CNNs
// are the CPU-hungry image models).
const synthSensitivity = "synth-cnn-s=zoo:res18,synth-cnn-l=zoo:res50,synth-seg=zoo:mobilenet,synth-gan=zoo:shufflenet,synth-rl=zoo:alexnet," +
	"synth-rnn=zoo:lstm,synth-transformer=zoo:transformer,synth-lm=zoo:gnmt,synth-asr=zoo:deepspeech,synth-rec=zoo:m5"

// TestSimulateTyped_ThreeSideBySide: the joint policy, Gavel's
// max_min_fairness_perf and Synergy's TUNE in one run and one table, on a
// cluster whose V100s sit in CPU-poor servers: joint's mean JCT is the
// lowest (4.069 h against 4.385 h and 4.425 h).
func TestSimulateTyped_ThreeSideBySide(t *testing.T) {
	syn := filepath.Join(gavelRef, "synthetic")
	cluster := writeFile(t, "cpu-poor.json", cpuPoorCluster)
	args := []string{"simulate", "--cluster-spec", cluster, "--gavel-trace", filepath.Join(syn, "continuous.trace"),
		"--throughputs", filepath.Join(syn, "throughputs.json"), "--policies", "joint,max_min_fairness_perf", "--strategies", "tune",
		"--sensitivity", synthSensitivity}
	table, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"CPUs, memory", "fifo (Synergy)          tune", "joint          tune", "max_min_fairness_perf  proportional"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	out, _, err := runCLI(t, append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Runs []struct {
			Point struct {
				Policy   string `json:"policy"`
				Strategy string `json:"strategy"`
			} `json:"point"`
			Result struct {
				MeanJCTS    float64 `json:"mean_jct_s"`
				NumFinished int     `json:"num_finished"`
			} `json:"result"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Runs) != 3 {
		t.Fatalf("%v\n%s", err, out)
	}
	mean := map[string]float64{}
	for _, r := range res.Runs {
		mean[r.Point.Policy+"+"+r.Point.Strategy] = r.Result.MeanJCTS / 3600
		if r.Result.NumFinished != 100 {
			t.Errorf("%+v: %d of 100 finished", r.Point, r.Result.NumFinished)
		}
	}
	j, g, s := mean["joint+"], mean["max_min_fairness_perf+"], mean["fifo+tune"]
	if !(j < 0.95*g) || !(j < s) {
		t.Errorf("mean JCT h: joint %.3f, max_min_fairness_perf %.3f, synergy fifo+tune %.3f: joint should be lowest", j, g, s)
	}
}

// TestSimulate_EngineByNames: the names choose the engine, not the flags.
func TestSimulate_EngineByNames(t *testing.T) {
	syn := filepath.Join(gavelRef, "synthetic")
	tp := filepath.Join(syn, "throughputs.json")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"joint without a workload flag runs typed": {[]string{"--policies", "joint", "--cluster-spec", "8:16:24", "--loads", "1"},
			"--throughputs: required on typed GPUs"},
		"Gavel's and Synergy's policies at once": {[]string{"--policies", "srtf,max_min_fairness_perf"},
			"--policies: max_min_fairness_perf run on typed GPUs in Gavel's round mechanism, srtf in Synergy's rounds"},
		"a Synergy policy on a Gavel trace": {[]string{"--policies", "las", "--gavel-trace", filepath.Join(syn, "static.trace")},
			"--gavel-trace: is a typed (Gavel) workload, but --policies names Synergy's las"},
		"a strategy typed GPUs do not run": {[]string{"--policies", "joint", "--strategies", "drf", "--throughputs", tp, "--gavel-trace", filepath.Join(syn, "static.trace")},
			`--strategies: "drf" does not run on typed GPUs`},
		"a sensitivity that is not a zoo model": {[]string{"--policies", "joint", "--sensitivity", "synth-cnn-s=zoo:nope", "--throughputs", tp, "--gavel-trace", filepath.Join(syn, "static.trace")},
			"--sensitivity: synth-cnn-s:"},
	} {
		_, _, err := runCLI(t, append([]string{"simulate"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	// fifo alone is Synergy's without a Gavel workload.
	out, _, err := runCLI(t, "simulate", "--policies", "fifo", "--strategies", "tune", "--num-jobs", "30", "--window", "all", "--loads", "4")
	if err != nil || !strings.Contains(out, "strategy") || strings.Contains(out, "CPUs, memory") {
		t.Errorf("fifo without a Gavel workload (%v):\n%s", err, out)
	}
}
