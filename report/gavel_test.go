package report

import (
	"reflect"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// TestSeriesFromRuns_Gavel: one series per run of Gavel's engine, labelled
// by policy (and by seed when seeds vary), holding the JCTs in hours of the
// window's jobs that finished; a dropped job (no JCT) and jobs outside the
// window are left out.
func TestSeriesFromRuns_Gavel(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	runs := []simcore.Run{
		{Point: simcore.Point{Policy: "fifo", Seed: 0}, Result: &simcore.Result{Window: &simcore.Window{First: 1, Last: 3}, Jobs: []simcore.JobRecord{
			{ID: 0, JCTS: f(3600)}, {ID: 1, JCTS: f(7200)}, {ID: 2, Failed: true}, {ID: 3, JCTS: f(1800)}, {ID: 4, JCTS: f(36000)},
		}}},
		{Point: simcore.Point{Policy: "fifo", Seed: 1}, Result: &simcore.Result{Jobs: []simcore.JobRecord{{ID: 0, JCTS: f(360)}}}},
	}
	got := SeriesFromRuns(runs)
	want := []JCTSeries{{Label: "fifo seed 0", JCTHours: []float64{2, 0.5}}, {Label: "fifo seed 1", JCTHours: []float64{0.1}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("series %+v, want %+v", got, want)
	}
}
