package profiler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
)

// notes is a Progress that keeps the notes.
type notes struct {
	mu  sync.Mutex
	msg []string
}

func (n *notes) PointStart(int, string, string)                    {}
func (n *notes) PointUpdate(string, int, Estimate, time.Duration)  {}
func (n *notes) PointDone(string, sensitivity.Cell, time.Duration) {}
func (n *notes) Note(m string)                                     { n.mu.Lock(); n.msg = append(n.msg, m); n.mu.Unlock() }

func TestRun_TimeBudgetStopsBetweenPointsAndSaves(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, noise: 0.05}
	cfg := baseConfig(t, fr)
	cfg.Strategy = StrategyGrid // 3 CPUs × (2 limits + unlimited) = 9 points
	// A clock that moves 1 s per reading: the sweep reads it a few times a
	// point, so a 20 s budget runs out after some points, not all.
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	cfg.TimeBudget = 20 * time.Second
	pr := &notes{}
	cfg.Progress = pr
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("a spent budget is not an error: %v", err)
	}
	if p.Cost.StopReason != sensitivity.SweepStopTimeBudget || p.Cost.TimeBudgetSeconds != 20 {
		t.Errorf("stop reason %q budget %gs, want time_budget, 20s", p.Cost.StopReason, p.Cost.TimeBudgetSeconds)
	}
	if p.Cost.Points == 0 || p.Cost.Points >= 9 {
		t.Errorf("%d points measured, want some of the 9", p.Cost.Points)
	}
	saved, err := sensitivity.Load(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Cost.StopReason != sensitivity.SweepStopTimeBudget || saved.Cost.Points != p.Cost.Points {
		t.Errorf("saved profile: %+v, want the stop reason and %d points", saved.Cost, p.Cost.Points)
	}
	var left, spent bool
	for _, m := range pr.msg {
		left = left || strings.Contains(m, "left (")
		spent = spent || strings.Contains(m, "time budget of 20s spent")
	}
	if !left || !spent {
		t.Errorf("progress notes %q: want time left after points and the budget's end", pr.msg)
	}
}

func TestRun_CostRecordsLaunchesAndTimeSplit(t *testing.T) {
	fr := &fakeRunner{rate: trueRate, noise: 0.05}
	cfg := baseConfig(t, fr)
	p, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cost
	if c.StopReason != sensitivity.SweepStopComplete || c.Launches != fr.started || c.Launches != c.Points {
		t.Errorf("cost %+v, want complete with one launch per point (%d started)", c, fr.started)
	}
	var warm, meas float64
	for _, cell := range p.Cells {
		if cell.Measured {
			st := cell.Stats
			if st.MeasureSeconds <= 0 || st.WarmupSeconds < 0 || st.MeasureSeconds > st.WallSeconds {
				t.Errorf("cell %g/%d: warm-up %g measure %g wall %g", cell.CPUs, cell.MemLimitBytes, st.WarmupSeconds, st.MeasureSeconds, st.WallSeconds)
			}
			warm += st.WarmupSeconds
			meas += st.MeasureSeconds
		}
	}
	if d := c.WarmupSeconds + c.MeasureSeconds - warm - meas; d > 1e-9 || d < -1e-9 {
		t.Errorf("totals %g + %g, want the cells' %g + %g", c.WarmupSeconds, c.MeasureSeconds, warm, meas)
	}
}
