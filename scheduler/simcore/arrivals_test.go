package simcore

import (
	"context"
	"errors"
	"testing"
)

func sliceArrivals(t *testing.T, at ...float64) *Arrivals[float64] {
	t.Helper()
	a, err := NewArrivals(func() (float64, bool, error) {
		if len(at) == 0 {
			return 0, false, nil
		}
		j := at[0]
		at = at[1:]
		return j, true, nil
	}, func(x float64) float64 { return x })
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestArrivals_DueInOrder(t *testing.T) {
	a := sliceArrivals(t, 0, 5, 5, 12)
	var got []float64
	add := func(x float64) error { got = append(got, x); return nil }
	// by 5: the jobs at 0, 5 and 5 (at or before now); 12 is next.
	if err := a.Due(context.Background(), 5, add); err != nil || len(got) != 3 {
		t.Fatalf("due by 5: %v, %v", got, err)
	}
	if next, ok := a.Next(); !ok || next != 12 {
		t.Errorf("next %v %v, want 12", next, ok)
	}
	if err := a.Due(context.Background(), 100, add); err != nil || len(got) != 4 {
		t.Fatalf("due by 100: %v, %v", got, err)
	}
	if _, ok := a.Next(); ok {
		t.Error("a job after the last")
	}
}

func TestArrivals_Errors(t *testing.T) {
	bad := errors.New("bad row")
	n := 0
	a, err := NewArrivals(func() (int, bool, error) {
		if n++; n > 2 {
			return 0, false, bad
		}
		return n, true, nil
	}, func(int) float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	// job 1 is added, reading job 2 works, job 2 is added, reading job 3 fails.
	added := 0
	if err := a.Due(context.Background(), 0, func(int) error { added++; return nil }); !errors.Is(err, bad) || added != 2 {
		t.Errorf("source error: %v after %d jobs", err, added)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	many := make([]float64, 2*arrivalCheckEvery)
	b := sliceArrivals(t, many...)
	added = 0
	if err := b.Due(ctx, 0, func(float64) error { added++; return nil }); !errors.Is(err, context.Canceled) || added != arrivalCheckEvery-1 {
		t.Errorf("cancelled: %v after %d jobs", err, added)
	}
}
