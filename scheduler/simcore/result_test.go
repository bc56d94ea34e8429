package simcore

import (
	"math"
	"testing"
)

func TestSummarise_QuantileLinear(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// pandas: position q·(n−1); 0.95·9 = 8.55 → 9 + 0.55·(10 − 9) = 9.55
	cases := map[float64]float64{0: 1, 0.5: 5.5, 0.95: 9.55, 0.99: 9.91, 1: 10}
	for q, want := range cases {
		if got := quantile(xs, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

func TestSummarise_Hours(t *testing.T) {
	// 3600, 7200, 10800 s: mean 2 h, median 2 h, max 3 h.
	s := Summarise([]float64{10800, 3600, 7200})
	if s.N != 3 || s.MeanHours != 2 || s.MedianHours != 2 || s.MaxHours != 3 {
		t.Errorf("%+v", s)
	}
	if (Summarise(nil) != Summary{}) {
		t.Errorf("no values: %+v", Summarise(nil))
	}
}

func TestFinished_Record(t *testing.T) {
	// arrival 100, finish 400: JCT 300 s; a negative start is not recorded.
	r := Finished(3, 100, -1, 400)
	if r.ID != 3 || r.FinishS == nil || *r.FinishS != 400 || r.JCTS == nil || *r.JCTS != 300 || r.StartS != nil {
		t.Errorf("%+v", r)
	}
	if r := Finished(3, 100, 150, 400); r.StartS == nil || *r.StartS != 150 {
		t.Errorf("start: %+v", r)
	}
}
