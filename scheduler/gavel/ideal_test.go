package gavel

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// In both modes every job finishes, no earlier than its steps at its
// fastest type allow, and the GPUs are never busier than the cluster.
func TestIdealAndRoundsRespectPhysics(t *testing.T) {
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
	for _, ideal := range []bool{false, true} {
		for _, pol := range []string{"isolated", "max_min_fairness_perf", "fifo_perf"} {
			p, err := NewPolicy(pol, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{Cluster: spec, Ideal: ideal, Check: true}, tp, Workload{Trace: jobs}, p)
			if err != nil {
				t.Fatalf("%s ideal=%v: %v", pol, ideal, err)
			}
			if res.NumFinished != len(jobs) || res.Utilization <= 0 || res.Utilization > 1 {
				t.Fatalf("%s ideal=%v: %d/%d finished, utilisation %v", pol, ideal, res.NumFinished, len(jobs), res.Utilization)
			}
			for i, j := range jobs {
				row, _ := tp.Row(j.Key(), spec.sortedTypes())
				best := 0.0
				for _, v := range row {
					best = max(best, v)
				}
				if r := res.Jobs[i]; *r.FinishS < j.ArrivalS+j.TotalSteps/best-1e-6 {
					t.Fatalf("%s ideal=%v: job %d finished at %v, before arrival + steps at its fastest (%v)", pol, ideal, i, *r.FinishS, j.ArrivalS+j.TotalSteps/best)
				}
			}
			t.Logf("%s ideal=%v: mean JCT %.3f h, makespan %.3f h, utilisation %.3f", pol, ideal, res.MeanJCTS/3600, res.MakespanS/3600, res.Utilization)
		}
	}
}

func TestMaxSTruncatesSaturatedRun(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ParseClusterSpec("1:1:1", "")
	g, err := NewGenerator(GeneratorConfig{MeanInterarrivalS: 600}, tp)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewPolicy("fifo_perf", 0, false)
	res, err := Run(context.Background(), Config{Cluster: spec, Window: &simcore.Window{First: 100, Last: 199}, MaxS: 48 * 3600}, tp, Workload{Generator: g}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.EndS < 48*3600 || res.EndS > 48*3600+DefaultRoundS+1 {
		t.Fatalf("truncated %v at %v s", res.Truncated, res.EndS)
	}
}
