package gavel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/synergy-sched/synergy/internal/testreq"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// refResult is the part of a reference JSON (testdata/reference, written
// by Gavel's own simulator) that the tests compare.
type refResult struct {
	TraceSHA       string  `json:"trace_sha256"`
	ThroughputsSHA string  `json:"throughputs_sha256"`
	ClusterSpec    string  `json:"cluster_spec"`
	Seed           uint64  `json:"seed"`
	NumFinished    int     `json:"num_finished"`
	MeanJCTS       float64 `json:"mean_jct_s"`
	MakespanS      float64 `json:"makespan_s"`
	EndS           float64 `json:"end_s"`
	Utilization    float64 `json:"utilization"`
	// Window is the driver's measured jobs (inclusive), when it was given
	// one: the run ended once they were done.
	Window   *[2]int `json:"window"`
	LeaseExt [2]int  `json:"lease_extensions"`
	Jobs     []struct {
		ID       int      `json:"id"`
		ArrivalS float64  `json:"arrival_s"`
		FinishS  *float64 `json:"finish_s"`
	} `json:"jobs"`
}

func loadRef(t *testing.T, path string) refResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r refResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// runRef runs our simulator on a reference run's inputs.
func runRef(t *testing.T, tracePath, tputPath, policy string, ref refResult) *simcore.Result {
	t.Helper()
	tp, err := LoadThroughputs(tputPath)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := LoadTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec(ref.ClusterSpec, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(policy, ref.Seed, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Cluster: spec, Seed: ref.Seed, Check: true}
	if ref.Window != nil {
		cfg.Window = &simcore.Window{First: ref.Window[0], Last: ref.Window[1]}
	}
	res, err := Run(context.Background(), cfg, tp, Workload{Trace: jobs}, p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// compareJobs asserts each job's finish within tol seconds of Gavel's.
func compareJobs(t *testing.T, res *simcore.Result, ref refResult, tol float64) {
	t.Helper()
	if len(res.Jobs) != len(ref.Jobs) {
		t.Fatalf("%d jobs, Gavel %d", len(res.Jobs), len(ref.Jobs))
	}
	bad := 0
	maxD := 0.0
	for i, rj := range ref.Jobs {
		j := res.Jobs[i]
		if j.ID != rj.ID || j.ArrivalS != rj.ArrivalS {
			t.Fatalf("job %d: id/arrival %d/%v, Gavel %d/%v", i, j.ID, j.ArrivalS, rj.ID, rj.ArrivalS)
		}
		switch {
		case (j.FinishS == nil) != (rj.FinishS == nil):
			t.Errorf("job %d: finished %v, Gavel %v", j.ID, j.FinishS != nil, rj.FinishS != nil)
			bad++
		case j.FinishS != nil && rj.FinishS != nil && math.Abs(*j.FinishS-*rj.FinishS) > tol:
			if bad < 10 {
				t.Errorf("job %d: finish %.3f s, Gavel %.3f s (Δ %.3f s)", j.ID, *j.FinishS, *rj.FinishS, *j.FinishS-*rj.FinishS)
			}
			bad++
		}
	}
	for i, rj := range ref.Jobs {
		if j := res.Jobs[i]; j.FinishS != nil && rj.FinishS != nil {
			maxD = math.Max(maxD, math.Abs(*j.FinishS-*rj.FinishS))
		}
	}
	t.Logf("largest per-job finish difference %.4f s over %d jobs", maxD, len(ref.Jobs))
	if bad > 0 {
		t.Errorf("%d of %d jobs differ from Gavel by more than %v s", bad, len(ref.Jobs), tol)
	}
	t.Logf("mean JCT %.3f h (Gavel %.3f h), makespan %.3f h (Gavel %.3f h), utilisation %.3f (Gavel %.3f), lease ext %v (Gavel %v)",
		res.MeanJCTS/3600, ref.MeanJCTS/3600, res.MakespanS/3600, ref.MakespanS/3600, res.Utilization, ref.Utilization, *res.LeaseExtensions, ref.LeaseExt)
}

var exactPolicies = []string{"fifo", "fifo_perf", "isolated", "gandiva"}

func TestSyntheticMatchesGavelJobByJob(t *testing.T) {
	dir := filepath.Join("testdata", "reference", "synthetic")
	for _, trace := range []string{"continuous", "static"} {
		for _, p := range exactPolicies {
			t.Run(trace+"/"+p, func(t *testing.T) {
				ref := loadRef(t, filepath.Join(dir, trace, p+".json"))
				res := runRef(t, filepath.Join(dir, trace+".trace"), filepath.Join(dir, "throughputs.json"), p, ref)
				compareJobs(t, res, ref, 2)
			})
		}
	}
}

// TestSyntheticWindowMatchesGavel replays our synthetic traces with a
// window, as Gavel's trace driver runs them with -s FIRST -e LAST+1: the
// run ends when the window's jobs are done (Gavel's is_done), not when
// every job of the trace is. What it asserts, against Gavel's own runs
// (testdata/reference/synthetic/*-window-*): every job finished or not as
// in Gavel's, at Gavel's time (±2 s), the same end of the run and the same
// utilisation (busy time over that end), and the window's mean JCT.
func TestSyntheticWindowMatchesGavel(t *testing.T) {
	dir := filepath.Join("testdata", "reference", "synthetic")
	for _, set := range []struct{ trace, window string }{{"continuous", "20-59"}, {"static", "10-29"}} {
		for _, p := range exactPolicies {
			t.Run(set.trace+"/"+p, func(t *testing.T) {
				ref := loadRef(t, filepath.Join(dir, set.trace+"-window-"+set.window, p+".json"))
				if ref.Window == nil {
					t.Fatal("the reference has no window")
				}
				res := runRef(t, filepath.Join(dir, set.trace+".trace"), filepath.Join(dir, "throughputs.json"), p, ref)
				compareJobs(t, res, ref, 2)
				if math.Abs(res.EndS-ref.EndS) > 1e-6 || math.Abs(res.Utilization-ref.Utilization) > 1e-9 {
					t.Errorf("end %.3f s, utilisation %.6f; Gavel: end %.3f s, utilisation %.6f", res.EndS, res.Utilization, ref.EndS, ref.Utilization)
				}
				if math.Abs(res.MeanJCTS-ref.MeanJCTS) > 1e-6*ref.MeanJCTS {
					t.Errorf("window mean JCT %.3f s, Gavel %.3f s", res.MeanJCTS, ref.MeanJCTS)
				}
				full := loadRef(t, filepath.Join(dir, set.trace, p+".json"))
				t.Logf("window %s: end %.2f h (Gavel %.2f h), utilisation %.3f (Gavel %.3f); the whole trace ends at %.2f h, utilisation %.3f",
					set.window, res.EndS/3600, ref.EndS/3600, res.Utilization, ref.Utilization, full.EndS/3600, full.Utilization)
			})
		}
	}
}

// gavelDir is a checkout of Gavel at the reference commit, for its
// physical-cluster inputs (never committed here).
func gavelDir(t *testing.T) string {
	d := os.Getenv("GAVEL_DIR")
	if d == "" {
		testreq.Skip(t, "gavel", "GAVEL_DIR is unset: set it to a Gavel checkout (stanford-futuredata/gavel at c4fa400) to compare on its physical-cluster traces")
	}
	return d
}

func TestPhysicalMatchesGavelJobByJob(t *testing.T) {
	g := gavelDir(t)
	tput := filepath.Join(g, "scheduler", "physical_cluster_throughputs.json")
	for _, trace := range []string{"max_min_fairness", "minimize_makespan"} {
		for _, p := range exactPolicies {
			t.Run(trace+"/"+p, func(t *testing.T) {
				ref := loadRef(t, filepath.Join("testdata", "reference", "physical", trace, p+".json"))
				tr := filepath.Join(g, "scheduler", "traces", "physical_cluster", trace+".trace")
				if sha(t, tr) != ref.TraceSHA || sha(t, tput) != ref.ThroughputsSHA {
					t.Fatalf("%s or %s is not the file the reference was run on (sha256 differs): check out Gavel c4fa400", tr, tput)
				}
				res := runRef(t, tr, tput, p, ref)
				compareJobs(t, res, ref, 2)
			})
		}
	}
}

// The LP policies have many optimal allocations, and a different optimal
// vertex gives a different schedule (docs/gavel-reference.md: HiGHS vs
// cvxopt moves Gavel's own results by up to 32 %): they are compared on
// mean JCT and makespan.
var lpPolicies = []string{"max_min_fairness", "max_min_fairness_perf", "min_total_duration", "min_total_duration_perf",
	"finish_time_fairness", "finish_time_fairness_perf"}

// compareMeans asserts mean JCT and makespan within tol of Gavel's, or,
// where Gavel's own results move with its LP solver (highsPath, the same
// run with HiGHS vertices instead of cvxopt's interior point, exists),
// within tol plus that move.
func compareMeans(t *testing.T, res *simcore.Result, ref refResult, tol float64, highsPath string) {
	t.Helper()
	tolJ, tolM := tol, tol
	if _, err := os.Stat(highsPath); err == nil {
		h := loadRef(t, highsPath)
		tolJ += math.Abs(h.MeanJCTS/ref.MeanJCTS - 1)
		tolM += math.Abs(h.MakespanS/ref.MakespanS - 1)
	}
	dj := res.MeanJCTS/ref.MeanJCTS - 1
	dm := res.MakespanS/ref.MakespanS - 1
	t.Logf("mean JCT %.3f h (Gavel %.3f h, %+.1f%%, tolerance %.1f%%), makespan %.3f h (Gavel %.3f h, %+.1f%%, tolerance %.1f%%), finished %d (Gavel %d)",
		res.MeanJCTS/3600, ref.MeanJCTS/3600, 100*dj, 100*tolJ, res.MakespanS/3600, ref.MakespanS/3600, 100*dm, 100*tolM, res.NumFinished, ref.NumFinished)
	if math.Abs(dj) > tolJ || math.Abs(dm) > tolM {
		t.Errorf("differs from Gavel by more than the tolerance")
	}
}

func TestSyntheticLPPoliciesNearGavel(t *testing.T) {
	dir := filepath.Join("testdata", "reference", "synthetic")
	for _, trace := range []string{"continuous", "static"} {
		for _, p := range lpPolicies {
			t.Run(trace+"/"+p, func(t *testing.T) {
				if _, err := NewPolicy(p, 0, false); err != nil {
					t.Skipf("%s: %v", p, err)
				}
				ref := loadRef(t, filepath.Join(dir, trace, p+".json"))
				res := runRef(t, filepath.Join(dir, trace+".trace"), filepath.Join(dir, "throughputs.json"), p, ref)
				compareMeans(t, res, ref, 0.05, filepath.Join("testdata", "reference", "highs", "synthetic", trace, p+".json"))
			})
		}
	}
}

func TestPhysicalLPPoliciesNearGavel(t *testing.T) {
	g := gavelDir(t)
	tput := filepath.Join(g, "scheduler", "physical_cluster_throughputs.json")
	for _, trace := range []string{"max_min_fairness", "minimize_makespan"} {
		for _, p := range lpPolicies {
			t.Run(trace+"/"+p, func(t *testing.T) {
				if _, err := NewPolicy(p, 0, false); err != nil {
					t.Skipf("%s: %v", p, err)
				}
				ref := loadRef(t, filepath.Join("testdata", "reference", "physical", trace, p+".json"))
				tr := filepath.Join(g, "scheduler", "traces", "physical_cluster", trace+".trace")
				res := runRef(t, tr, tput, p, ref)
				compareMeans(t, res, ref, 0.05, filepath.Join("testdata", "reference", "highs", "physical", trace, p+".json"))
			})
		}
	}
}
