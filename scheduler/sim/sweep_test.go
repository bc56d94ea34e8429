package sim

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseWindow(t *testing.T) {
	valid := map[[2]string]Window{
		{"", "generated"}:            {4000, 4999}, // Synergy's default for a generated workload
		{"", "replay"}:               All,          // a replay reports on every job
		{"all", "generated"}:         All,
		{" 100 - 199 ", "generated"}: {100, 199},
		{"7-7", "replay"}:            {7, 7},
	}
	for in, want := range valid {
		if got, err := ParseWindow(in[0], in[1] == "replay"); err != nil || got != want {
			t.Errorf("%q (%s): %+v, %v; want %+v", in[0], in[1], got, err, want)
		}
	}
	for _, in := range []string{"5-2", "-1-3", "10", "a-b"} {
		if _, err := ParseWindow(in, false); err == nil || !strings.Contains(err.Error(), strconv.Quote(in)+" is not FIRST-LAST") {
			t.Errorf("%q: error %v", in, err)
		}
	}
}

func TestGrid_Points(t *testing.T) {
	g := Grid{Strategies: []string{"fair", "tune"}, Policies: []string{"fifo"}, Loads: []float64{6, 9}, Seeds: []uint64{1, 2}}
	ps := g.Points()
	// 2 strategies × 1 policy × 2 loads × 2 seeds, seeds innermost.
	if len(ps) != 8 || ps[0] != (Point{"fair", "fifo", 6, 1}) || ps[1] != (Point{"fair", "fifo", 6, 2}) ||
		ps[2] != (Point{"fair", "fifo", 9, 1}) || ps[7] != (Point{"tune", "fifo", 9, 2}) {
		t.Errorf("points %+v", ps)
	}
	g.Replay = true
	want := []Point{{"fair", "fifo", 0, 0}, {"tune", "fifo", 0, 0}}
	if ps := g.Points(); !reflect.DeepEqual(ps, want) {
		t.Errorf("replay points %+v, want %+v", ps, want)
	}
}
