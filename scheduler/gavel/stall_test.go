package gavel

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// A job that can never run (it needs two GPUs; the cluster has one) and
// nothing left to arrive: where Gavel's simulator loops forever, the run
// fails as stalled (simcore.ErrStalled) and says how many jobs are active.
// A job that fits on the same cluster finishes.
func TestRun_AJobThatCanNeverRunStallsTheRun(t *testing.T) {
	tp, err := ParseThroughputs([]byte(`{"v100": {"('A', 1)": {"null": 2}, "('A', 2)": {"null": 3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("v100=1", "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(gpus int) (*simcore.Result, error) {
		p, err := NewPolicy("fifo", 0, false)
		if err != nil {
			t.Fatal(err)
		}
		trace := []Job{{JobType: "A", Command: "x", TotalSteps: 100, ScaleFactor: gpus, PriorityWeight: 1, SLO: -1}}
		return Run(context.Background(), Config{Cluster: spec}, tp, Workload{Trace: trace}, p)
	}
	if _, err := run(2); !errors.Is(err, simcore.ErrStalled) || !strings.Contains(err.Error(), "1 active jobs") {
		t.Errorf("a 2-GPU job on 1 GPU: %v, want a stall naming 1 active job", err)
	}
	res, err := run(1)
	if err != nil || res.NumFinished != 1 {
		t.Fatalf("a 1-GPU job: %v, %+v", err, res)
	}
}

// A generated static workload (every job at t = 0) with jobs wider than
// the cluster: such a run could only stall (or, with a window holding the
// job, never end), so it is refused before it runs, naming the job type
// no GPU type can run. (It used to run until stalled: once every job had
// arrived the generator names where its next job would have (0), and the
// clock had to stay where it was; TestRun_WindowPastNumJobsEnds keeps
// that static case.)
func TestRun_AGeneratedWorkloadThatCanNeverFinishIsRefused(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("1:1:1", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"fifo", "max_min_fairness"} {
		g, err := NewGenerator(GeneratorConfig{NumJobs: 12, MultiGPU: true}, tp)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPolicy(pol, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), Config{Cluster: spec}, tp, Workload{Generator: g}, p)
		if err == nil || !strings.Contains(err.Error(), "no GPU type of the cluster can run") {
			t.Errorf("%s: %v, want a refusal naming the job type no GPU type can run", pol, err)
		}
	}
}
