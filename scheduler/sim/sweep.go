package sim

import (
	"context"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// Grid is a sweep's axes.
type Grid struct {
	Strategies []string
	Policies   []string
	// Loads (jobs per hour) and Seeds drive a generated workload.
	Loads []float64
	Seeds []uint64
	// Replay is set for a workload that brings its own arrivals (a trace,
	// or a Philly log replayed at its submission times): loads and seeds
	// do not apply, and each strategy and policy runs once (load 0, seed
	// 0).
	Replay bool
}

// Points expands the grid: strategy × policy × load × seed, nested in that
// order.
func (g Grid) Points() []simcore.Point {
	loads, seeds := g.Loads, g.Seeds
	if g.Replay {
		loads, seeds = []float64{0}, []uint64{0}
	}
	var ps []simcore.Point
	for _, s := range g.Strategies {
		for _, p := range g.Policies {
			for _, l := range loads {
				for _, seed := range seeds {
					ps = append(ps, simcore.Point{Strategy: s, Policy: p, JobsPerHour: l, Seed: seed})
				}
			}
		}
	}
	return ps
}

// SweepResult is what `synergy simulate` writes: the one sweep result of
// every engine (simcore.SweepResult).
type SweepResult = simcore.SweepResult

// Sweep runs every point through the one sweep driver (simcore.Sweep: its
// error and interrupt rule keep the finished runs). base is copied for
// each point with the point's strategy and policy; source makes the point's
// workload (called once per point, so each run has its own generator).
// Runs look at ctx every round: once it is done, Sweep returns within a
// round of every running simulation, with the runs that finished and ctx's
// error.
func Sweep(ctx context.Context, base Config, points []simcore.Point, workers int, source func(simcore.Point) (Source, error), progress func(done, total int, p simcore.Point)) (*SweepResult, error) {
	return simcore.Sweep(ctx, points, workers, func(ctx context.Context, p simcore.Point) (*simcore.Result, error) {
		return runPoint(ctx, base, p, source)
	}, progress)
}

func runPoint(ctx context.Context, base Config, p simcore.Point, source func(simcore.Point) (Source, error)) (*simcore.Result, error) {
	s, err := scheduler.NewStrategy(p.Strategy)
	if err != nil {
		return nil, err
	}
	pol, err := scheduler.NewPolicy(p.Policy)
	if err != nil {
		return nil, err
	}
	src, err := source(p)
	if err != nil {
		return nil, err
	}
	cfg := base
	cfg.Strategy, cfg.Policy = s, pol
	if base.RunProgress != nil {
		cfg.Progress = func(rounds int, nowS float64) { base.RunProgress(p, rounds, nowS) }
	}
	res, err := RunContext(ctx, cfg, src)
	if res != nil {
		res.Seed = p.Seed
	}
	return res, err
}
