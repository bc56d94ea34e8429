package gavel

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// testdata/generator/gavel_generated.json was written by Gavel's own
// utils.generate_job (gavel_generate.py, run against a Gavel checkout) on
// our made-up throughputs.json; the generator must draw the same jobs.
func TestGeneratorMatchesGavel(t *testing.T) {
	dir := filepath.Join("testdata", "generator")
	tp, err := LoadThroughputs(filepath.Join(dir, "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gavel_generated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		Seed          uint64  `json:"seed"`
		Lam           float64 `json:"lam"`
		MultiGPU      bool    `json:"multi_gpu"`
		MultiPriority bool    `json:"multi_priority"`
		SLOs          bool    `json:"slos"`
		Jobs          []struct {
			JobType     string  `json:"job_type"`
			ScaleFactor int     `json:"scale_factor"`
			TotalSteps  float64 `json:"total_steps"`
			DurationS   float64 `json:"duration_s"`
			Priority    float64 `json:"priority_weight"`
			SLO         float64 `json:"slo"`
			ArrivalS    float64 `json:"arrival_s"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, r := range runs {
		g, err := NewGenerator(GeneratorConfig{Seed: r.Seed, MeanInterarrivalS: r.Lam, NumJobs: len(r.Jobs),
			MultiGPU: r.MultiGPU, MultiPriority: r.MultiPriority, SLOs: r.SLOs}, tp)
		if err != nil {
			t.Fatal(err)
		}
		sfs := map[int]int{}
		for i, want := range r.Jobs {
			j := g.Next()
			sfs[j.ScaleFactor]++
			if j.JobType != want.JobType || j.ScaleFactor != want.ScaleFactor || j.PriorityWeight != want.Priority || j.SLO != want.SLO ||
				!close(j.TotalSteps, want.TotalSteps) || !close(j.DurationS, want.DurationS) || !close(j.ArrivalS, want.ArrivalS) {
				t.Fatalf("seed %d job %d: %+v, Gavel %+v", r.Seed, i, j, want)
			}
		}
		if r.MultiGPU && sfs[1] == len(r.Jobs) {
			t.Errorf("seed %d: no multi-GPU job drawn", r.Seed)
		}
	}
}

func TestGeneratorRejectsMissingTemplates(t *testing.T) {
	tp, err := ParseThroughputs([]byte(`{"v100": {"('A3C', 1)": {"null": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGenerator(GeneratorConfig{MeanInterarrivalS: 100}, tp); err == nil {
		t.Fatal("generator accepted throughputs without Gavel's templates")
	}
}

// testdata/generator/gavel_simulated.json is Gavel's own simulator on
// generated workloads (gavel_simulate.py: continuous multi-GPU with
// priorities at 0.6 jobs/h measured on jobs 20-59, and static, on
// 8 V100, 8 P100 and 16 K80 with our made-up throughputs): same jobs
// generated, every finished job's JCT within 2 s.
func TestGeneratedRunsMatchGavel(t *testing.T) {
	dir := filepath.Join("testdata", "generator")
	tp, err := LoadThroughputs(filepath.Join(dir, "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gavel_simulated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		Policy        string  `json:"policy"`
		Lam           float64 `json:"lam"`
		MultiGPU      bool    `json:"multi_gpu"`
		MultiPriority bool    `json:"multi_priority"`
		Window        [2]int  `json:"window"`
		Jobs          []struct {
			ID       int      `json:"id"`
			ArrivalS float64  `json:"arrival_s"`
			JCTS     *float64 `json:"jct_s"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("8:8:16", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		t.Run(r.Policy, func(t *testing.T) {
			gc := GeneratorConfig{Seed: 0, MeanInterarrivalS: r.Lam, MultiGPU: r.MultiGPU, MultiPriority: r.MultiPriority}
			if r.Lam == 0 {
				gc.NumJobs = r.Window[1] - r.Window[0] + 1
			}
			g, err := NewGenerator(gc, tp)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := NewPolicy(r.Policy, 0, false)
			res, err := Run(context.Background(), Config{Cluster: spec, Seed: 0, Check: true, Window: &simcore.Window{First: r.Window[0], Last: r.Window[1]}}, tp, Workload{Generator: g}, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != len(r.Jobs) {
				t.Fatalf("%d jobs generated, Gavel %d", len(res.Jobs), len(r.Jobs))
			}
			maxD := 0.0
			for i, want := range r.Jobs {
				got := res.Jobs[i]
				if math.Abs(got.ArrivalS-want.ArrivalS) > 1e-6 || (got.JCTS == nil) != (want.JCTS == nil) {
					t.Fatalf("job %d: arrival %v finished %v, Gavel %v %v", i, got.ArrivalS, got.JCTS != nil, want.ArrivalS, want.JCTS != nil)
				}
				if got.JCTS != nil {
					maxD = math.Max(maxD, math.Abs(*got.JCTS-*want.JCTS))
				}
			}
			t.Logf("%d jobs, largest JCT difference %.4f s", len(r.Jobs), maxD)
			if maxD > 2 {
				t.Errorf("a JCT differs from Gavel's by %.3f s", maxD)
			}
		})
	}
}
