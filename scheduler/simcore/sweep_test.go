package simcore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The one sweep rule: results in point order; a failed run stops the sweep
// and a cancelled context stops it, and either way the finished runs come
// back with an error saying how many.
func TestSweep_FinishedRunsAlwaysKept(t *testing.T) {
	points := []Point{{Policy: "a"}, {Policy: "b"}, {Policy: "c"}, {Policy: "d"}}
	ok := func(_ context.Context, p Point) (*Result, error) { return &Result{Policy: p.Policy}, nil }
	res, err := Sweep(context.Background(), points, 3, ok, nil)
	if err != nil || len(res.Runs) != 4 || res.Runs[2].Point.Policy != "c" || res.Runs[2].Result.Policy != "c" {
		t.Fatalf("%v, %+v: want 4 runs in point order", err, res)
	}
	fail := func(_ context.Context, p Point) (*Result, error) {
		if p.Policy == "c" {
			return nil, errors.New("boom")
		}
		return &Result{Policy: p.Policy}, nil
	}
	res, err = Sweep(context.Background(), points, 1, fail, nil)
	if err == nil || !strings.Contains(err.Error(), "c load 0 seed 0: boom") || !strings.Contains(err.Error(), "2 of 4 runs finished") || len(res.Runs) != 2 {
		t.Errorf("a failed run: %v, %d runs; want the error naming c and a, b kept", err, len(res.Runs))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err = Sweep(ctx, points, 1, ok, func(done, _ int, _ Point) {
		if done == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || len(res.Runs) < 1 || res.Runs[0].Point.Policy != "a" {
		t.Errorf("cancelled after one run: %v, %+v; want the finished runs with ctx's error", err, res)
	}
}
