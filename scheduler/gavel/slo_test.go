package gavel

import (
	"context"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// runSLOs runs policy on 40 generated single-GPU jobs with SLOs (Gavel's
// generator, seed 1, 2 jobs/h) on 8:8:8 with K80s cheap, so the cost
// policy favours them and jobs miss deadlines.
func runSLOs(t *testing.T, policy string) *simcore.Result {
	t.Helper()
	tp, err := LoadThroughputs("testdata/generator/throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := NewGenerator(GeneratorConfig{Seed: 1, MeanInterarrivalS: 1800, NumJobs: 40, SLOs: true}, tp)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := ParsePrices(strings.NewReader(`{"types": {"v100": 3, "p100": 1.5, "k80": 0.2}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ParseClusterSpec("8:8:8", "")
	pol, err := NewPolicy(policy, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Cluster: spec, Prices: prices, Seed: 1, Check: true}, tp, Workload{Generator: gen}, pol)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The SLO variant misses fewer deadlines than the cost policy it extends,
// on the same jobs; and the counts are what their definitions say,
// recomputed here from the jobs: ours (finished after the deadline, or
// never finished) and Gavel's (JCT compared with the deadline timestamp).
func TestCostSLOs_FewerViolationsThanCostAlone(t *testing.T) {
	cost := runSLOs(t, CostPolicyName)
	slo := runSLOs(t, CostSLOPolicyName)
	for _, r := range []*simcore.Result{cost, slo} {
		jobs, ours, gavel := 0, 0, 0
		for _, j := range r.Jobs {
			if j.DeadlineS == nil {
				t.Fatalf("%s: job %d has no deadline, but every generated job has an SLO", r.Policy, j.ID)
			}
			jobs++
			if j.FinishS == nil || *j.FinishS > *j.DeadlineS {
				ours++ // every job of this run finishes, so "never finished" counts none
			}
			if j.JCTS != nil && *j.JCTS > *j.DeadlineS {
				gavel++
			}
		}
		if r.SLOJobs != jobs || r.SLOViolations != ours || r.SLOViolationsGavel != gavel {
			t.Errorf("%s: slo_jobs %d, violations %d, Gavel's %d; recomputed %d, %d, %d", r.Policy, r.SLOJobs, r.SLOViolations, r.SLOViolationsGavel, jobs, ours, gavel)
		}
		if r.NumFinished != r.NumJobs {
			t.Errorf("%s: %d of %d jobs finished", r.Policy, r.NumFinished, r.NumJobs)
		}
	}
	t.Logf("cost: %d/%d violations (Gavel's count %d), cost %.2f; SLOs: %d/%d (%d), cost %.2f",
		cost.SLOViolations, cost.SLOJobs, cost.SLOViolationsGavel, *cost.TotalCost, slo.SLOViolations, slo.SLOJobs, slo.SLOViolationsGavel, *slo.TotalCost)
	if cost.SLOViolations == 0 {
		t.Fatal("the cost policy missed no deadline: the workload does not test the SLO variant")
	}
	if slo.SLOViolations >= cost.SLOViolations {
		t.Errorf("SLO variant: %d violations, cost policy alone %d; want fewer", slo.SLOViolations, cost.SLOViolations)
	}
	if slo.Policy != "ThroughputNormalizedByCostSum_PerfSLOs" {
		t.Errorf("policy name %q, want Gavel's", slo.Policy)
	}
}
