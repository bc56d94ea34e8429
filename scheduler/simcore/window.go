package simcore

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Window is an inclusive range of job ids: the jobs a run's results are
// summarised over (Synergy's series_id_filter, Gavel's jobs_to_complete) and,
// for a workload that would not end by itself, the jobs whose completion ends
// the run.
type Window struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

// All is the window that holds every job.
var All = Window{First: 0, Last: math.MaxInt32}

// Steady is the default window of an open (generated) workload in both
// papers: jobs 4000–4999, the steady state (the cluster has filled and the
// tail has not drained).
var Steady = Window{First: 4000, Last: 4999}

// Has reports whether id is in the window.
func (w Window) Has(id int) bool { return id >= w.First && id <= w.Last }

// IsAll reports whether w holds every job.
func (w Window) IsAll() bool { return w == All }

// Size is the number of ids in the window, or n (the workload's jobs) for
// All.
func (w Window) Size(n int) int {
	if w.IsAll() {
		return n
	}
	return w.Last - w.First + 1
}

// String is "FIRST-LAST", or "all".
func (w Window) String() string {
	if w.IsAll() {
		return "all"
	}
	return fmt.Sprintf("%d-%d", w.First, w.Last)
}

// ParseWindow reads "FIRST-LAST" (0 <= FIRST <= LAST) or "all"; an empty
// string is def (each engine's default: Steady where its workload has a
// steady state to measure, All where it is a replay or a fixed list).
func ParseWindow(s string, def Window) (Window, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return def, nil
	case "all":
		return All, nil
	}
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return Window{}, fmt.Errorf("%q is not FIRST-LAST with 0 <= FIRST <= LAST, or all", s)
	}
	return Window{First: first, Last: last}, nil
}
