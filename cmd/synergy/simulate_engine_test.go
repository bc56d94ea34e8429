package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// TestSimulate_OneResultType: Synergy's rounds and Gavel's write the same
// result type, whose common figures agree with its own jobs in both: the
// window's finished jobs are num_finished and jct.n, mean_jct_s is jct's
// mean in seconds (1e-9 relative), the makespan is the window's last finish
// minus its first arrival, and 0 <= utilization <= 1.
func TestSimulate_OneResultType(t *testing.T) {
	syn := filepath.Join(gavelRef, "synthetic")
	runs := map[string][]string{
		simcore.EngineSynergy: {"simulate", "--num-jobs", "60", "--loads", "6", "--seed", "1", "--strategies", "tune", "--policies", "fifo", "--window", "10-49", "--json"},
		simcore.EngineGavel: {"simulate", "--gavel-trace", filepath.Join(syn, "continuous.trace"), "--throughputs", filepath.Join(syn, "throughputs.json"),
			"--cluster-spec", "8:16:24", "--policies", "fifo_perf", "--window", "10-49", "--json"},
	}
	for engine, args := range runs {
		out, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", engine, err, stderr)
		}
		var res struct{ Runs []simcore.Run }
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Runs) != 1 {
			t.Fatalf("%s: %v (%d runs)", engine, err, len(res.Runs))
		}
		r := res.Runs[0].Result
		if r.Engine != engine || r.Window == nil || *r.Window != (simcore.Window{First: 10, Last: 49}) {
			t.Fatalf("%s: engine %q, window %v", engine, r.Engine, r.Window)
		}
		n, first, last := 0, math.Inf(1), math.Inf(-1)
		for _, j := range r.Jobs {
			if !r.Window.Has(j.ID) || j.FinishS == nil {
				continue
			}
			n++
			first, last = math.Min(first, j.ArrivalS), math.Max(last, *j.FinishS)
			if j.JCTS == nil || math.Abs(*j.JCTS-(*j.FinishS-j.ArrivalS)) > 1e-6 {
				t.Errorf("%s: job %d: jct %v, finish %v, arrival %v", engine, j.ID, j.JCTS, *j.FinishS, j.ArrivalS)
			}
		}
		if n != 40 || r.NumFinished != n || r.JCT.N != n {
			t.Errorf("%s: %d window jobs finished, num_finished %d, jct.n %d; want 40", engine, n, r.NumFinished, r.JCT.N)
		}
		if math.Abs(r.MeanJCTS-r.JCT.MeanHours*3600) > 1e-9*r.MeanJCTS {
			t.Errorf("%s: mean_jct_s %v, jct.mean_hours × 3600 = %v", engine, r.MeanJCTS, r.JCT.MeanHours*3600)
		}
		if math.Abs(r.MakespanS-(last-first)) > 1e-6 || !(r.Utilization > 0 && r.Utilization <= 1) {
			t.Errorf("%s: makespan %v s (jobs say %v), utilisation %v", engine, r.MakespanS, last-first, r.Utilization)
		}
	}
}
