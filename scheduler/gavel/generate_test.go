package gavel

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
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
