package gavel

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
)

// pairTask matches a log line's pair of jobs ("job [3 7] v100 workers [...]").
var pairTask = regexp.MustCompile(`job \[\d+ \d+\]`)

func syntheticInputs(t testing.TB) (*Throughputs, []Job) {
	t.Helper()
	dir := filepath.Join("testdata", "reference", "synthetic")
	tp, err := LoadThroughputs(filepath.Join(dir, "throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	trace, err := LoadTrace(filepath.Join(dir, "continuous.trace"))
	if err != nil {
		t.Fatal(err)
	}
	return tp, trace
}

// The packed policies on the synthetic continuous trace (100 jobs, pair throughputs from the
// file's partner keys), with the per-round invariant checks on (no GPU placed twice, no type
// over capacity, each job's time alone plus in its pairs <= 1, Σ sf·X <= GPUs per type for the
// LP policy): every job finishes, pairs do run, and two runs are byte-identical.
func TestPackedPolicies_SyntheticTraceInvariants(t *testing.T) {
	tp, trace := syntheticInputs(t)
	cluster, err := ParseClusterSpec("8:16:24", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range PackedPolicyNames {
		var out [2][]byte
		var logs [2]bytes.Buffer
		for i := range out {
			p, err := NewPolicy(name, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{Cluster: cluster, Check: true, Log: &logs[i]}, tp, Workload{Trace: trace}, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if res.NumFinished != len(trace) {
				t.Errorf("%s: %d of %d jobs finished", name, res.NumFinished, len(trace))
			}
			if out[i], err = json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out[0], out[1]) || !bytes.Equal(logs[0].Bytes(), logs[1].Bytes()) {
			t.Errorf("%s: two runs differ", name)
		}
		pairs := len(pairTask.FindAllString(logs[0].String(), -1))
		if pairs == 0 {
			t.Errorf("%s: no pair of jobs ever ran on shared GPUs", name)
		}
		t.Logf("%s: %d pair micro-tasks", name, pairs)
	}
}

// fifo_packed on 1 GPU, three jobs of one scale factor: job 0 runs; job 1 is queued and packs
// with job 0 when their summed normalised throughput is above 1.5 (0.9 + 0.8 = 1.7), not when
// it is 1.4 (0.7 + 0.7); job 2 finds no single job left (job 0 is in the pair) and stays queued.
func TestFIFOPacked_Threshold(t *testing.T) {
	for _, c := range []struct {
		share [2]float64
		pair  bool
	}{{[2]float64{0.9, 0.8}, true}, {[2]float64{0.7, 0.7}, false}} {
		s := &State{Types: []string{"v100"}, Workers: []int{1}}
		for id := 0; id < 3; id++ {
			s.Jobs = append(s.Jobs, StateJob{ID: id, Throughput: []float64{10}, ScaleFactor: 1, PriorityWeight: 1})
		}
		pairs := []PairState{
			{A: 0, B: 1, Throughput: [][2]float64{{10 * c.share[0], 10 * c.share[1]}}},
			{A: 0, B: 2, Throughput: [][2]float64{{9, 9}}},
			{A: 1, B: 2, Throughput: [][2]float64{{9, 9}}},
		}
		p, _ := NewPolicy("fifo_packed", 0, false)
		single, packed, err := p.(PackingPolicy).AllocatePacked(s, pairs)
		if err != nil {
			t.Fatal(err)
		}
		if c.pair {
			if row := packed[[2]int{0, 1}]; len(row) != 1 || row[0] != 1 || single[0][0] != 0 || len(packed) != 1 {
				t.Errorf("share %v: singles %v, pairs %v; want only pair (0, 1) on v100", c.share, single, packed)
			}
		} else if len(packed) != 0 || single[0][0] != 1 || single[1][0] != 0 || single[2][0] != 0 {
			t.Errorf("share %v: singles %v, pairs %v; want job 0 alone", c.share, single, packed)
		}
	}
}

// max_min_fairness_packed through the simulator's state: the pair that packs well gets the
// GPU, and every job's row (alone plus pairs) stays <= 1.
func TestMaxMinFairnessPacked_Allocate(t *testing.T) {
	s := &State{Types: []string{"v100"}, Workers: []int{1}, Jobs: []StateJob{
		{ID: 3, Throughput: []float64{10}, ScaleFactor: 1, PriorityWeight: 1},
		{ID: 5, Throughput: []float64{4}, ScaleFactor: 1, PriorityWeight: 1}}}
	p, err := NewPolicy("max_min_fairness_packed", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	single, packed, err := p.(PackingPolicy).AllocatePacked(s, []PairState{{A: 3, B: 5, Throughput: [][2]float64{{8, 3.2}}}})
	if err != nil {
		t.Fatal(err)
	}
	if row := packed[[2]int{3, 5}]; len(row) != 1 || row[0] < 1-1e-6 || single[3][0] > 1e-6 || single[5][0] > 1e-6 {
		t.Errorf("singles %v, pairs %v: want the pair on the GPU all the time", single, packed)
	}
	if _, _, err := p.(PackingPolicy).AllocatePacked(s, []PairState{{A: 3, B: 9, Throughput: [][2]float64{{1, 1}}}}); err == nil {
		t.Error("a pair naming an inactive job: no error")
	}
}
