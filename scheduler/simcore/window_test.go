package simcore

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseWindow_Table(t *testing.T) {
	valid := []struct {
		in   string
		def  Window
		want Window
	}{
		{"", Steady, Window{4000, 4999}}, // the caller's default
		{"", All, All},
		{"all", Steady, All},
		{" 100 - 199 ", Steady, Window{100, 199}},
		{"7-7", All, Window{7, 7}},
	}
	for _, c := range valid {
		if got, err := ParseWindow(c.in, c.def); err != nil || got != c.want {
			t.Errorf("%q (default %v): %+v, %v; want %+v", c.in, c.def, got, err, c.want)
		}
	}
	for _, in := range []string{"5-2", "-1-3", "10", "a-b"} {
		if _, err := ParseWindow(in, Steady); err == nil || !strings.Contains(err.Error(), strconv.Quote(in)+" is not FIRST-LAST") {
			t.Errorf("%q: error %v", in, err)
		}
	}
}

func TestWindow_HasSizeString(t *testing.T) {
	w := Window{10, 19}
	if !w.Has(10) || !w.Has(19) || w.Has(9) || w.Has(20) {
		t.Errorf("%v: Has wrong at the edges", w)
	}
	// 19 - 10 + 1 = 10 ids; All counts the workload's n.
	if w.Size(100) != 10 || All.Size(100) != 100 {
		t.Errorf("sizes %d, %d", w.Size(100), All.Size(100))
	}
	if w.String() != "10-19" || All.String() != "all" || w.IsAll() || !All.IsAll() {
		t.Errorf("strings %q %q", w, All)
	}
}
