package gavel

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

func TestParsePrices_NamesTheField(t *testing.T) {
	cases := map[string]string{
		`{"types": {}}`:                      "prices: types: no prices given",
		`{"types": {"v100": -1}}`:            "prices: types.v100 = -1: want a finite price > 0",
		`{"types": {"v100": 1}, "extra": 2}`: `unknown field "extra"`,
		`{"types": {"v100": 1}, "changes": [{"at_s": -5, "types": {"v100": 2}}]}`:                                   "prices: changes[0].at_s = -5",
		`{"types": {"v100": 1}, "changes": [{"at_s": 5, "types": {"v100": 2}}, {"at_s": 5, "types": {"v100": 3}}]}`: "prices: changes[1].at_s = 5",
		`{"types": {"v100": 1}, "changes": [{"at_s": 5, "types": {"k80": 2}}]}`:                                     "prices: changes[0].types.k80: type has no initial price",
		`{"types": {"v100": 1}, "changes": [{"at_s": 5, "types": {"v100": 0}}]}`:                                    "prices: changes[0].types.v100 = 0",
	}
	for in, want := range cases {
		if _, err := ParsePrices(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	p, err := ParsePrices(strings.NewReader(`{"types": {"v100": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check([]string{"k80", "v100"}); err == nil || !strings.Contains(err.Error(), "no price for k80") {
		t.Errorf("a cluster type without a price: %v", err)
	}
}

func TestPrices_At(t *testing.T) {
	p, err := ParsePrices(strings.NewReader(`{"types": {"v100": 3, "k80": 1}, "changes": [{"at_s": 100, "types": {"v100": 2}}, {"at_s": 200, "types": {"k80": 5}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    string
		at   float64
		want float64
	}{{"v100", 0, 3}, {"v100", 99.9, 3}, {"v100", 100, 2}, {"v100", 1e9, 2}, {"k80", 150, 1}, {"k80", 200, 5}} {
		if got := p.At(c.t, c.at); got != c.want {
			t.Errorf("%s at %v s: %v, want %v", c.t, c.at, got, c.want)
		}
	}
}

// TestCost_IsPriceTimesGPUHours: with one price for every type, a run's
// total cost is that price × the GPU-hours its micro-tasks ran (utilisation
// × simulated time × GPUs), the jobs' costs sum to it, a change to twice the
// price at t = 0 doubles it, and a change after the run's end changes
// nothing.
func TestCost_IsPriceTimesGPUHours(t *testing.T) {
	dir := filepath.Join("testdata", "reference", "synthetic")
	tp, err := LoadThroughputs(filepath.Join(dir, "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := LoadTrace(filepath.Join(dir, "continuous.trace"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ParseClusterSpec("8:16:24", "")
	run := func(prices string) *simcore.Result {
		p, err := ParsePrices(strings.NewReader(prices))
		if err != nil {
			t.Fatal(err)
		}
		pol, _ := NewPolicy("max_min_fairness_perf", 0, false)
		res, err := Run(context.Background(), Config{Cluster: spec, Prices: p}, tp, Workload{Trace: jobs}, pol)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	base := run(`{"types": {"v100": 1.5, "p100": 1.5, "k80": 1.5}}`)
	gpus := 0
	for _, n := range spec.GPUs {
		gpus += n
	}
	want := 1.5 * base.Utilization * base.EndS * float64(gpus) / 3600
	if base.TotalCost == nil || math.Abs(*base.TotalCost-want) > 1e-6*want {
		t.Fatalf("total cost %v, want price × GPU-hours = %v", base.TotalCost, want)
	}
	sum := 0.0
	for _, j := range base.Jobs {
		if j.Cost == nil || *j.Cost <= 0 {
			t.Fatalf("job %d has no cost: %+v", j.ID, j)
		}
		sum += *j.Cost
	}
	if math.Abs(sum-*base.TotalCost) > 1e-9*sum {
		t.Fatalf("jobs' costs sum to %v, total %v", sum, *base.TotalCost)
	}
	double := run(`{"types": {"v100": 1.5, "p100": 1.5, "k80": 1.5}, "changes": [{"at_s": 0, "types": {"v100": 3, "p100": 3, "k80": 3}}]}`)
	if math.Abs(*double.TotalCost-2**base.TotalCost) > 1e-9**base.TotalCost {
		t.Fatalf("twice the price from t = 0: %v, want %v", *double.TotalCost, 2**base.TotalCost)
	}
	late := run(`{"types": {"v100": 1.5, "p100": 1.5, "k80": 1.5}, "changes": [{"at_s": 1e12, "types": {"v100": 3}}]}`)
	if *late.TotalCost != *base.TotalCost {
		t.Fatalf("a change after the run: %v, want %v", *late.TotalCost, *base.TotalCost)
	}
}

func TestCostPolicy_NeedsPrices(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "reference", "synthetic", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := LoadTrace(filepath.Join("testdata", "reference", "synthetic", "continuous.trace"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ParseClusterSpec("8:16:24", "")
	pol, err := NewPolicy(CostPolicyName, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Config{Cluster: spec}, tp, Workload{Trace: jobs}, pol); err == nil || !strings.Contains(err.Error(), "needs a price file") {
		t.Fatalf("without prices: %v", err)
	}
	p, _ := ParsePrices(strings.NewReader(`{"types": {"v100": 2.48, "p100": 1.46, "k80": 0.45}}`))
	res, err := Run(context.Background(), Config{Cluster: spec, Prices: p, Check: true}, tp, Workload{Trace: jobs}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if res.NumFinished != len(jobs) || res.TotalCost == nil || *res.TotalCost <= 0 {
		t.Fatalf("%d/%d finished, cost %v", res.NumFinished, len(jobs), res.TotalCost)
	}
}
