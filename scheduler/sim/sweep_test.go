package sim

import (
	"reflect"
	"testing"
)

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
