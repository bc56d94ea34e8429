package gavel

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// A generator with --num-jobs N and a window reaching job N or later: the
// window can never complete, and the run must end when every generated job
// has (before, the clock stood still once they had and the loop ran
// forever; --gavel-max-hours could not stop it). The run is bounded by a
// context so that a regression fails instead of hanging.
func TestRun_WindowPastNumJobsEnds(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("8:16:24", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		interarrive float64
		first, last int
		want        int // the window's jobs among the 30 generated
	}{
		{"continuous 0-99", 3600, 0, 99, 30},
		{"static 0-99", 0, 0, 99, 30},
		{"continuous 25-40", 3600, 25, 40, 5},
		{"static 25-40", 0, 25, 40, 5},
	} {
		for _, ideal := range []bool{false, true} {
			g, err := NewGenerator(GeneratorConfig{NumJobs: 30, MeanInterarrivalS: tc.interarrive}, tp)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPolicy("max_min_fairness_perf", 0, false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			w := simcore.Window{First: tc.first, Last: tc.last}
			res, err := Run(ctx, Config{Cluster: spec, Window: &w, Ideal: ideal}, tp, Workload{Generator: g}, p)
			cancel()
			if err != nil {
				t.Fatalf("%s (ideal %v): %v", tc.name, ideal, err)
			}
			if res.NumJobs != 30 || res.NumFinished != tc.want {
				t.Errorf("%s (ideal %v): %d jobs, %d of the window finished; want 30 and %d", tc.name, ideal, res.NumJobs, res.NumFinished, tc.want)
			}
		}
	}
}

// A generator that can draw a job no GPU type of the cluster can run (an
// 8-GPU job on 4 GPUs of each type) is refused before the run, naming the
// job type, instead of holding a job that never finishes.
func TestRun_GeneratorDrawingAnUnrunnableJobIsRefused(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("4:4:4", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, multi := range []bool{false, true} {
		g, err := NewGenerator(GeneratorConfig{NumJobs: 20, MultiGPU: multi}, tp)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPolicy("fifo", 0, false)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err = Run(ctx, Config{Cluster: spec}, tp, Workload{Generator: g}, p)
		cancel()
		switch {
		case !multi && err != nil:
			t.Errorf("single-GPU jobs on 4:4:4: %v", err)
		case multi && (err == nil || !strings.Contains(err.Error(), "no GPU type of the cluster can run") || !strings.Contains(err.Error(), "8)")):
			t.Errorf("8-GPU jobs on 4:4:4: %v, want a refusal naming the 8-GPU job type", err)
		}
	}
}

// Ctrl-C on a Gavel sweep keeps the runs that finished (it used to drop
// them all): cancelled after its first run, the sweep returns that run
// with the context's error.
func TestSweep_CancelKeepsFinishedRuns(t *testing.T) {
	tp, err := LoadThroughputs(filepath.Join("testdata", "generator", "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseClusterSpec("8:16:24", "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sweep{Config: Config{Cluster: spec}, Throughputs: tp, Generator: &GeneratorConfig{NumJobs: 20},
		Policies: []string{"fifo", "fifo_perf", "max_min_fairness_perf"}, Loads: []float64{0}, Seeds: []uint64{0}, Workers: 1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := s.Run(ctx, func(done, _ int, _ simcore.Point) {
		if done == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || res == nil || len(res.Runs) < 1 || res.Runs[0].Point.Policy != "fifo" || res.Runs[0].Result == nil {
		t.Fatalf("%v, %+v: want the finished fifo run kept with ctx's error", err, res)
	}
}
