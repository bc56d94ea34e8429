package gavel

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestHierarchical_EntitySharesTrackWeights is Gavel's Fig. 11 in the simulator: three entities
// weighted 1:2:3 ('fairness' inside), 24 long single-GPU jobs of the 10 synthetic types arriving
// one every 10 minutes (job i belongs to entity i mod 3), on 4 V100 + 4 P100 + 4 K80, with
// max_min_fairness_water_filling_perf and Gavel's round mechanism. Every micro-task the
// mechanism runs is read from the run's log; a job's normalised effective throughput in it is
// its steps/s on that type ÷ its proportional-share throughput. Once every job has arrived
// (4 h) and the allocation has been recomputed, each hour's share of the total normalised
// effective throughput must be within 0.04 of the entity's weight share (1/6, 2/6, 3/6).
func TestHierarchical_EntitySharesTrackWeights(t *testing.T) {
	models := []string{"synth-cnn-s (batch size 64)", "synth-cnn-l (batch size 128)", "synth-rnn (batch size 32)",
		"synth-transformer (batch size 256)", "synth-rec (batch size 1024)", "synth-rl (batch size 1)",
		"synth-gan (batch size 1)", "synth-lm (batch size 20)", "synth-seg (batch size 8)", "synth-asr (batch size 16)"}
	var trace []Job
	for i := 0; i < 24; i++ {
		trace = append(trace, Job{JobType: models[i%len(models)], Command: "x", TotalSteps: 1e9, ScaleFactor: 1,
			PriorityWeight: 1, SLO: -1, ArrivalS: float64(i) * 600})
	}
	ents := equalEntities(1, 2, 3)
	share := entityShares(t, trace, ents, ents)
	// Control: the same jobs without the hierarchy (every job its own entity) split about evenly.
	if flat := entityShares(t, trace, nil, ents); flat[8][2]/(flat[8][0]+flat[8][1]+flat[8][2]) > 0.4 {
		t.Errorf("without entities, entity 2 still got %.3f of hour 8: the test cannot tell", flat[8][2]/(flat[8][0]+flat[8][1]+flat[8][2]))
	}
	const hours = 12
	want := [3]float64{1.0 / 6, 2.0 / 6, 3.0 / 6}
	for h := 5; h < hours; h++ {
		sum := share[h][0] + share[h][1] + share[h][2]
		got := [3]float64{share[h][0] / sum, share[h][1] / sum, share[h][2] / sum}
		t.Logf("hour %d: entity shares %.3f %.3f %.3f (weights 1:2:3 → %.3f %.3f %.3f)", h, got[0], got[1], got[2], want[0], want[1], want[2])
		for e := range want {
			if math.Abs(got[e]-want[e]) > 0.04 {
				t.Errorf("hour %d: entity %d has %.3f of the effective throughput, want %.3f ± 0.04", h, e, got[e], want[e])
			}
		}
	}
	// Before the other entities' jobs arrive, entity 0 (job 0, t < 600 s) has the whole cluster.
	if share[0][0] == 0 {
		t.Errorf("hour 0: entity 0 got no throughput")
	}
}

// entityShares runs the trace under max_min_fairness_water_filling_perf over ents (nil: none)
// and returns, per simulated hour, each entity's (of groups) summed normalised effective
// throughput over the micro-tasks that started in that hour.
func entityShares(t *testing.T, trace []Job, ents, groups *Entities) [][3]float64 {
	t.Helper()
	tp, err := LoadThroughputs("testdata/reference/synthetic/throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := ParseClusterSpec("4:4:4", "")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewHierarchicalPolicy("max_min_fairness_water_filling_perf", ents)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	const hours = 12
	cfg := Config{Cluster: cluster, MaxS: hours * 3600, Check: true, Log: &log}
	if _, err := Run(context.Background(), cfg, tp, Workload{Trace: trace}, pol); err != nil {
		t.Fatal(err)
	}
	types := cluster.sortedTypes()
	norm := map[int]map[string]float64{} // job → type → T / proportional
	for id, j := range trace {
		row, err := tp.Row(j.Key(), types)
		if err != nil {
			t.Fatal(err)
		}
		prop := 0.0
		for i := range types {
			prop += row[i] / float64(len(types)) // 4 GPUs of each type: equal shares
		}
		norm[id] = map[string]float64{}
		for i, ty := range types {
			norm[id][ty] = row[i] / prop
		}
	}
	share := make([][3]float64, hours)
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var at float64
		var id int
		var ty string
		line := strings.NewReplacer("[", " ", "]", " ").Replace(sc.Text())
		if _, err := fmt.Sscanf(line, " %g job %d %s", &at, &id, &ty); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if h := int(at / 3600); h < hours {
			share[h][groups.Of(id)] += norm[id][ty]
		}
	}
	return share
}

func TestParseEntities_Errors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"entities": []}`, `field "entities": empty`},
		{`{"entities": [{"name": "a", "weight": 0}]}`, `entities[0].weight: 0`},
		{`{"entities": [{"name": "a", "weight": 1, "policy": "lifo"}]}`, `entities[0].policy: "lifo"`},
		{`{"entities": [{"name": "a", "weight": 1}, {"name": "a", "weight": 1}]}`, `entities[1].name: "a" given twice`},
		{`{"entities": [{"name": "a", "weight": 1}], "jobs": {"b": [1]}}`, `jobs.b: no entity`},
		{`{"entities": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}], "jobs": {"a": [1], "b": [1]}}`, `jobs.b[0]: job 1 is already in a`},
		{`{"entities": [{"name": "a", "weight": 1}], "assign": "random"}`, `assign: "random"`},
		{`{"entities": [{"name": "a", "weight": 1, "colour": 2}]}`, `unknown field "colour"`},
	} {
		_, err := ParseEntities(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestParseEntities_Assignment(t *testing.T) {
	e, err := ParseEntities(strings.NewReader(`{"entities": [{"name": "a", "weight": 1}, {"name": "b", "weight": 2, "policy": "fifo"}],
		"jobs": {"b": [0, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	// job 0, 2 explicit → b (1); job 1 → 1 mod 2 = 1 (b); job 4 → 0 (a).
	for id, want := range map[int]int{0: 1, 2: 1, 1: 1, 4: 0, 3: 1} {
		if got := e.Of(id); got != want {
			t.Errorf("job %d: entity %d, want %d", id, got, want)
		}
	}
	if e.List[0].Policy != "fairness" || e.List[1].Policy != "fifo" {
		t.Errorf("policies %q %q, want fairness (default) and fifo", e.List[0].Policy, e.List[1].Policy)
	}
}

// equalEntities returns n entities with the given weights, fairness inside, jobs round robin.
func equalEntities(weights ...float64) *Entities {
	e := &Entities{jobs: map[int]int{}, assign: "round_robin"}
	for i, w := range weights {
		e.List = append(e.List, EntitySpec{Name: fmt.Sprintf("entity%d", i), Weight: w, Policy: "fairness"})
	}
	return e
}
