package sim

import (
	"context"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Issue 40: a two-line trace whose second job arrives at 1e12 s made the
// hourly allocation series ask for 2.8e8 points (11 GB) at once. The
// series is capped at maxSharePoints, each point wider, and still covers
// the run: its first point starts at the first round and its last ends at
// the last; a short run keeps one point per hour.
func TestRun_FarArrivalKeepsTheSeriesBounded(t *testing.T) {
	jobs := []*scheduler.Job{mustJob(t, 0, "alexnet", 0, 1000, 1), mustJob(t, 1, "alexnet", 1e12, 1000, 1)}
	res, err := RunContext(context.Background(), Config{Cluster: defaultCluster(t), Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{},
		RoundSeconds: 300, Window: simcore.All}, &List{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.SharesHourly)
	if n == 0 || n > maxSharePoints {
		t.Fatalf("%d points, want 1 to %d", n, maxSharePoints)
	}
	if first, last := res.SharesHourly[0], res.SharesHourly[n-1]; first.StartS > 0 || last.EndS < res.EndS {
		t.Errorf("series %v-%v s, want it to cover the run 0-%v s", first.StartS, last.EndS, res.EndS)
	}
	if res.NumFinished != 2 {
		t.Errorf("%d jobs finished, want 2", res.NumFinished)
	}
	short, err := RunContext(context.Background(), Config{Cluster: defaultCluster(t), Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{},
		RoundSeconds: 300, Window: simcore.All}, &List{Jobs: jobs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range short.SharesHourly {
		if p.EndS-p.StartS != 3600 {
			t.Errorf("short run: point %d spans %v s, want an hour", i, p.EndS-p.StartS)
		}
	}
}
