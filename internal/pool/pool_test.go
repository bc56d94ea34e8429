package pool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestRun_AllFinishInAnyParallelism(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 100} {
		var calls atomic.Int32
		counts := []int{}
		fin, err := Run(context.Background(), 7, workers, func(context.Context, int) error { calls.Add(1); return nil },
			func(_, c int) { counts = append(counts, c) })
		if err != nil || calls.Load() != 7 || len(counts) != 7 || counts[6] != 7 {
			t.Errorf("workers %d: err %v, %d calls, done counts %v", workers, err, calls.Load(), counts)
		}
		for i, f := range fin {
			if !f {
				t.Errorf("workers %d: run %d not finished", workers, i)
			}
		}
	}
}

// TestRun_FirstErrorStops: run 2 fails; with one worker runs 3.. never
// start and the error is run 2's.
func TestRun_FirstErrorStops(t *testing.T) {
	var started atomic.Int32
	fin, err := Run(context.Background(), 10, 1, func(_ context.Context, i int) error {
		started.Add(1)
		if i == 2 {
			return fmt.Errorf("run %d broke", i)
		}
		return nil
	}, nil)
	if err == nil || err.Error() != "run 2 broke" || started.Load() != 3 || !fin[0] || !fin[1] || fin[2] || fin[3] {
		t.Errorf("err %v, %d started, finished %v", err, started.Load(), fin)
	}
}

// TestRun_InFlightRunsSeeTheStop: a run blocked on its context returns
// when another fails, and only the real failure is reported.
func TestRun_InFlightRunsSeeTheStop(t *testing.T) {
	_, err := Run(context.Background(), 2, 2, func(ctx context.Context, i int) error {
		if i == 1 {
			return errors.New("real")
		}
		<-ctx.Done()
		return ctx.Err()
	}, nil)
	if err == nil || err.Error() != "real" {
		t.Errorf("err %v, want the real failure", err)
	}
}

// TestRun_CancelKeepsFinished: ctx cancelled after run 1 finishes: runs
// 0 and 1 are kept, the rest never start, and the error is ctx's.
func TestRun_CancelKeepsFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fin, err := Run(ctx, 5, 1, func(ctx context.Context, i int) error { return ctx.Err() }, func(i, _ int) {
		if i == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || !fin[0] || !fin[1] || fin[2] {
		t.Errorf("err %v, finished %v", err, fin)
	}
}
