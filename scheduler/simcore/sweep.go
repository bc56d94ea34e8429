package simcore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/synergy-sched/synergy/internal/pool"
)

// SweepResult is a sweep's runs in the order of its points: the one result
// type of every engine's sweep (Gavel's adds its profile rows beside it).
type SweepResult struct {
	Runs []Run `json:"runs"`
}

// WriteJSON writes the sweep's results, indented, with a trailing newline
// (the --out file of `synergy simulate`).
func (r *SweepResult) WriteJSON(w io.Writer) error { return WriteJSON(w, r) }

// WriteJSON writes v (a SweepResult, or a type holding one) as
// SweepResult.WriteJSON does.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Sweep is the one sweep driver of every engine: it runs each point on up
// to workers goroutines (internal/pool) and returns the results in the
// order of points whatever the parallelism, so one seed gives
// byte-identical output. Its error and interrupt rule, the same for every
// engine: the first failed run stops the sweep (its error, naming the
// point, is returned); a cancelled ctx stops every running run within a
// round (ctx's error is returned, wrapped); in every case the runs that
// finished are returned too, in the order of points, and the error says
// how many of the sweep's runs that was. progress, if set, is called
// (serially) after each finished run.
func Sweep(ctx context.Context, points []Point, workers int, run func(ctx context.Context, p Point) (*Result, error), progress func(done, total int, p Point)) (*SweepResult, error) {
	runs := make([]Run, len(points))
	_, err := pool.Run(ctx, len(points), workers, func(ctx context.Context, i int) error {
		p := points[i]
		res, err := run(ctx, p)
		if err != nil {
			return fmt.Errorf("%s: %w", pointName(p), err)
		}
		runs[i] = Run{Point: p, Result: res}
		return nil
	}, func(i, done int) {
		if progress != nil {
			progress(done, len(points), points[i])
		}
	})
	out := &SweepResult{}
	for _, r := range runs {
		if r.Result != nil {
			out.Runs = append(out.Runs, r)
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return out, fmt.Errorf("simulate: %w (%d of %d runs finished)", cerr, len(out.Runs), len(points))
	}
	if err != nil {
		return out, fmt.Errorf("%w (%d of %d runs finished)", err, len(out.Runs), len(points))
	}
	return out, nil
}

// pointName names a point in an error.
func pointName(p Point) string {
	name := p.Policy
	if p.Strategy != "" {
		name += "+" + p.Strategy
	}
	return fmt.Sprintf("%s load %v seed %d", name, p.JobsPerHour, p.Seed)
}
