package sim

import (
	"reflect"
	"testing"

	"github.com/synergy-sched/synergy/scheduler/simcore"
)

func TestGrid_Points(t *testing.T) {
	g := Grid{Strategies: []string{"fair", "tune"}, Policies: []string{"fifo"}, Loads: []float64{6, 9}, Seeds: []uint64{1, 2}}
	ps := g.Points()
	// 2 strategies × 1 policy × 2 loads × 2 seeds, seeds innermost.
	if len(ps) != 8 || ps[0] != (simcore.Point{Strategy: "fair", Policy: "fifo", JobsPerHour: 6, Seed: 1}) || ps[1] != (simcore.Point{Strategy: "fair", Policy: "fifo", JobsPerHour: 6, Seed: 2}) ||
		ps[2] != (simcore.Point{Strategy: "fair", Policy: "fifo", JobsPerHour: 9, Seed: 1}) || ps[7] != (simcore.Point{Strategy: "tune", Policy: "fifo", JobsPerHour: 9, Seed: 2}) {
		t.Errorf("points %+v", ps)
	}
	g.Replay = true
	want := []simcore.Point{{Strategy: "fair", Policy: "fifo"}, {Strategy: "tune", Policy: "fifo"}}
	if ps := g.Points(); !reflect.DeepEqual(ps, want) {
		t.Errorf("replay points %+v, want %+v", ps, want)
	}
}
