package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/synergy-sched/synergy/internal/pool"
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

// SweepResult is what `synergy simulate` writes.
type SweepResult struct {
	Runs []simcore.Run `json:"runs"`
}

// WriteJSON writes the sweep's results, indented, with a trailing newline
// (the --out file of `synergy simulate`).
func (r *SweepResult) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Sweep runs every point on up to workers goroutines (internal/pool: the
// first failed run stops the sweep and is the error). base is copied for
// each point with the point's strategy and policy; source makes the point's
// workload (called once per point, so each run has its own generator).
// Results come back in the order of points whatever the scheduling, so the
// output does not depend on the number of workers. progress, if set, is
// called (serially) after each run with the number done. Runs look at ctx
// every round: once it is done, Sweep returns within a round of every
// running simulation, with the runs that finished and ctx's error.
func Sweep(ctx context.Context, base Config, points []simcore.Point, workers int, source func(simcore.Point) (Source, error), progress func(done, total int, p simcore.Point)) (*SweepResult, error) {
	out := &SweepResult{Runs: make([]simcore.Run, len(points))}
	_, err := pool.Run(ctx, len(points), workers, func(ctx context.Context, i int) error {
		p := points[i]
		res, err := runPoint(ctx, base, p, source)
		if err != nil {
			return fmt.Errorf("%s+%s load %v seed %d: %w", p.Policy, p.Strategy, p.JobsPerHour, p.Seed, err)
		}
		out.Runs[i] = simcore.Run{Point: p, Result: res}
		return nil
	}, func(i, done int) {
		if progress != nil {
			progress(done, len(points), points[i])
		}
	})
	if cerr := ctx.Err(); cerr != nil {
		return out.finished(), fmt.Errorf("simulate: %w (%d of %d runs finished)", cerr, len(out.finished().Runs), len(points))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// finished returns the runs that finished (a cancelled sweep's), in the
// order of the points.
func (r *SweepResult) finished() *SweepResult {
	out := &SweepResult{}
	for _, run := range r.Runs {
		if run.Result != nil {
			out.Runs = append(out.Runs, run)
		}
	}
	return out
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
	res, err := RunContext(ctx, cfg, src)
	if res != nil {
		res.Seed = p.Seed
	}
	return res, err
}
