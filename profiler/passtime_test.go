package profiler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/sensitivity"
)

// A slow step: 10 samples/s, 40 samples a pass. A memory point needs two
// passes (80 samples, at least 8 s at the warm rate) and has 5 s: it is
// not launched, and its cell says why and which flag to change. With 20 s
// it is launched.
func TestRun_ColdPointTooSlowForItsTimeoutIsNotLaunched(t *testing.T) {
	for _, tc := range []struct {
		timeout  time.Duration
		launched bool
	}{{5 * time.Second, false}, {20 * time.Second, true}} {
		fr := &fakeRunner{rate: func(runner.Limits) float64 { return 10 }}
		cfg := baseConfig(t, fr)
		cfg.Strategy = StrategyGrid
		cfg.CPUs = []float64{1}
		cfg.MemLimits = []int64{50 << 20}
		cfg.MaxIterations, cfg.MinIterations = 20, 10
		cfg.PointTimeout = tc.timeout
		p, err := run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := p.Cell(1, 50<<20)
		if c == nil {
			t.Fatalf("timeout %v: no memory cell", tc.timeout)
		}
		if tc.launched {
			if fr.started != 2 || c.Failure != nil && strings.Contains(c.Failure.Message, "not launched") {
				t.Errorf("timeout %v: %d jobs started, cell %+v; want the memory point launched", tc.timeout, fr.started, c.Failure)
			}
			continue
		}
		if fr.started != 1 {
			t.Errorf("timeout %v: %d jobs started, want only the unlimited point's", tc.timeout, fr.started)
		}
		if c.Failure == nil || c.Failure.Class != sensitivity.FailTimeout || c.SamplesPerS != 0 {
			t.Fatalf("timeout %v: cell %+v, want a timeout failure and no figure", tc.timeout, c)
		}
		for _, want := range []string{"not launched", "two passes over its 40 samples take at least 8s", "10.0 samples/s", "--point-timeout above 8s"} {
			if !strings.Contains(c.Failure.Message, want) {
				t.Errorf("message %q lacks %q", c.Failure.Message, want)
			}
		}
	}
}
