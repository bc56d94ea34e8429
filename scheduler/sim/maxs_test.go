package sim

import (
	"context"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// MaxS bounds Synergy's engine as --max-hours bounds Gavel's: an
// overloaded open workload (its window would finish days later) ends once
// the clock passes the limit, says Truncated, and reports the jobs that
// finished by then; without the limit the same run goes on past it.
func TestRun_MaxSEndsTheRun(t *testing.T) {
	run := func(maxS float64) *simcore.Result {
		g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 60, Split: [3]float64{20, 70, 10}, Seed: 3, MultiGPU: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := RunContext(context.Background(), Config{Cluster: defaultCluster(t), Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{},
			RoundSeconds: 300, Window: simcore.Window{First: 0, Last: 199}, FirstRoundAtZero: true, MaxS: maxS}, g)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	const limit = 10 * 3600
	cut := run(limit)
	if !cut.Truncated || cut.EndS <= limit || cut.EndS > limit+300 {
		t.Errorf("MaxS %d s: truncated %v at %v s; want truncated within a round after the limit", limit, cut.Truncated, cut.EndS)
	}
	full := run(0)
	if full.Truncated || full.EndS <= limit || full.NumFinished <= cut.NumFinished {
		t.Errorf("no limit: truncated %v at %v s, %d finished (%d when cut); want a longer, complete run", full.Truncated, full.EndS, full.NumFinished, cut.NumFinished)
	}
}
