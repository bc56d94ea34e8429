package sim

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseWindow(t *testing.T) {
	cases := []struct {
		in     string
		replay bool
		want   Window
		err    string
	}{
		{"", false, Window{4000, 4999}, ""}, // Synergy's default for a generated workload
		{"", true, All, ""},                 // a replay reports on every job
		{"all", false, All, ""},
		{" 100 - 199 ", false, Window{100, 199}, ""},
		{"7-7", true, Window{7, 7}, ""},
		{"5-2", false, Window{}, `"5-2" is not FIRST-LAST`},
		{"-1-3", false, Window{}, "is not FIRST-LAST"},
		{"10", false, Window{}, "is not FIRST-LAST"},
		{"a-b", false, Window{}, "is not FIRST-LAST"},
	}
	for _, c := range cases {
		got, err := ParseWindow(c.in, c.replay)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q replay=%v: %+v, %v; want %+v", c.in, c.replay, got, err, c.want)
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
