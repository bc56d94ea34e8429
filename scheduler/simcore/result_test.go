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

// Tally's figures are over the window's jobs: its JCTs, and its makespan
// from its first arrival (an unfinished job's included) to its last
// finish; AllJobs takes every finished job.
func TestResult_TallyOverTheWindow(t *testing.T) {
	jobs := []JobRecord{
		Finished(0, 0, 0, 7200),      // outside the window
		{ID: 1, ArrivalS: 100},       // in it, unfinished: opens the span
		Finished(2, 200, 300, 3800),  // JCT 3600
		Finished(3, 400, 400, 11200), // JCT 10800, the last finish
		Finished(9, 900, 900, 1e6),   // outside
		{ID: 4, ArrivalS: 500, Failed: true},
	}
	r := &Result{Window: &Window{First: 1, Last: 4}}
	jct, first, last := r.Tally(jobs)
	if len(jct) != 2 || jct[0] != 3600 || jct[1] != 10800 {
		t.Fatalf("window JCTs %v, want [3600 10800] in the records' order", jct)
	}
	if first != 100 || last != 11200 || r.MakespanS != 11100 {
		t.Errorf("span %v–%v, makespan %v: want 100–11200, 11100", first, last, r.MakespanS)
	}
	if r.NumFinished != 2 || r.MeanJCTS != 7200 || r.JCT.MeanHours != 2 || r.AllJobs.N != 4 {
		t.Errorf("finished %d, mean %v s, JCT %+v, all %+v", r.NumFinished, r.MeanJCTS, r.JCT, r.AllJobs)
	}
	// No window: every job; none finished: no makespan.
	r = &Result{}
	if jct, _, _ := r.Tally([]JobRecord{{ID: 5, ArrivalS: 1}}); len(jct) != 0 || r.MakespanS != 0 || r.NumFinished != 0 {
		t.Errorf("nothing finished: %v, %+v", jct, r)
	}
}
