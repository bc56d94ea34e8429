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

// In ideal mode the arrivals due at an event join in the same round, so a
// run ended by MaxS at that event counts them: a long job at 0 and one
// arriving at 2 h, a limit of 1 h, end at the 2 h event with both jobs.
func TestIdeal_MaxSCountsTheArrivalsOfTheLastEvent(t *testing.T) {
	tp, err := ParseThroughputs([]byte(`{"v100": {"('A', 1)": {"null": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("v100=1", "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy("max_min_fairness", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	trace := []Job{
		{JobType: "A", Command: "x", TotalSteps: 1e6, ScaleFactor: 1, PriorityWeight: 1, SLO: -1},
		{JobType: "A", Command: "x", TotalSteps: 1e6, ScaleFactor: 1, PriorityWeight: 1, SLO: -1, ArrivalS: 7200},
	}
	res, err := Run(context.Background(), Config{Cluster: spec, Ideal: true, MaxS: 3600}, tp, Workload{Trace: trace}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.EndS != 7200 || res.NumJobs != 2 {
		t.Errorf("truncated %v at %v s with %d jobs; want truncated at 7200 s with 2", res.Truncated, res.EndS, res.NumJobs)
	}
}
