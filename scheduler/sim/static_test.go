package sim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// TestStatic_MatchesOriginalJobByJob replays Synergy's shipped static trace
// (deploy_trace/static_100job_6_3_1100.0: 100 jobs arriving in the first
// 0.1 s) with Static on, as the original's `runner.py --static
// --replay_trace` does, and compares every job's finish time with the
// original's own run (testdata/synergy_static_100job.original, made by
// scripts/synergy-original.sh) under fair and tune × FIFO, SRTF, LAS and
// FTF (the original's order, ftf-synergy).
//
// What it asserts: each job finishes at the original's time to the
// millisecond, and every run's first round is at t = 1 s (no job starts
// before it). Without Static the first round is at t = 0, when only job 0
// has arrived, and the other 99 wait a round: TestStatic_OffIsOneRoundLate.
func TestStatic_MatchesOriginalJobByJob(t *testing.T) {
	want := readOriginalFinishes(t)
	for _, key := range sortedRunKeys(want) {
		parts := strings.Fields(key)
		t.Run(key, func(t *testing.T) {
			res := runStatic(t, parts[0], parts[1], true)
			if len(res.Jobs) != len(want[key]) {
				t.Fatalf("%d jobs finished, the original %d", len(res.Jobs), len(want[key]))
			}
			for _, j := range res.Jobs {
				w, ok := want[key][j.ID]
				if !ok {
					t.Fatalf("job %d is not in the original's run", j.ID)
				}
				if d := *j.FinishS - w; d > 1e-3 || d < -1e-3 {
					t.Errorf("job %d finished at %.3f s, the original at %.3f s", j.ID, *j.FinishS, w)
				}
				if *j.StartS < StaticFirstRoundSeconds {
					t.Errorf("job %d started at %v s, before the first round", j.ID, *j.StartS)
				}
			}
		})
	}
}

// TestStatic_OffIsOneRoundLate pins what Static changes: with the first
// round at the round holding the first arrival (t = 0), the jobs arriving
// at 0.001–0.099 s wait for the round at 300 s, so the mean JCT is higher.
func TestStatic_OffIsOneRoundLate(t *testing.T) {
	on, off := runStatic(t, "tune", "fifo", true), runStatic(t, "tune", "fifo", false)
	if !(off.JCT.MeanHours > on.JCT.MeanHours) {
		t.Fatalf("mean JCT %v h without Static, %v h with it: want it higher without", off.JCT.MeanHours, on.JCT.MeanHours)
	}
	for _, j := range off.Jobs {
		if j.ID > 0 && *j.StartS < DefaultRoundSeconds {
			t.Fatalf("job %d (arrival %v s) started at %v s without Static: want the round at 300 s", j.ID, j.ArrivalS, *j.StartS)
		}
	}
}

func runStatic(t *testing.T, strategy, policy string, static bool) *simcore.Result {
	t.Helper()
	c, err := scheduler.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.NewStrategy(strategy)
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/synergy_static_100job.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := ParseTraceContext(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate(Config{Cluster: &c, Strategy: s, Policy: p, RoundSeconds: DefaultRoundSeconds, Window: simcore.Window{First: 0, Last: 1 << 30}, Static: static},
		&List{Jobs: jobs, Name: "static"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readOriginalFinishes reads "strategy policy job_id finish_s" lines.
func readOriginalFinishes(t *testing.T) map[string]map[int]float64 {
	t.Helper()
	f, err := os.Open("testdata/synergy_static_100job.original")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[int]float64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("line %d: %q: want 4 fields", n, line)
		}
		id, err1 := strconv.Atoi(fs[2])
		fin, err2 := strconv.ParseFloat(fs[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %d: %q: bad id or finish", n, line)
		}
		key := fmt.Sprintf("%s %s", fs[0], fs[1])
		if out[key] == nil {
			out[key] = map[int]float64{}
		}
		out[key][id] = fin
	}
	if len(out) != 8 {
		t.Fatalf("%d runs in the original's file, want 8", len(out))
	}
	return out
}

func sortedRunKeys(m map[string]map[int]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
