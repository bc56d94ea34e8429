package sim

import (
	"fmt"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
)

// TestDropFinished_AnyOrder takes finished jobs out of the queue whether
// credit listed them in the queue's order (one walk comparing pointers) or
// not (a batch strategy or LAS's largest-first offer: then the jobs left
// are looked at), keeping the others in order.
func TestDropFinished_AnyOrder(t *testing.T) {
	for _, order := range [][]int{{1, 3}, {3, 1}, {4, 0, 2}, {0, 1, 2, 3, 4}} {
		s := &run{index: map[*scheduler.Job]*scheduler.Active{}, window: simcore.WindowCount{Window: simcore.Window{First: 0, Last: 4}}}
		for id := range 5 {
			j := &scheduler.Job{ID: id, Model: "m5", GPUs: 1, Iterations: 10}
			a := scheduler.NewActive(j, 1)
			s.queue = append(s.queue, a)
			s.index[j] = a
			s.window.Arrive(id)
		}
		for _, id := range order {
			a := s.queue[id]
			a.Executed = a.Job.Iterations
			s.finishing = append(s.finishing, a)
		}
		s.dropFinished(600)
		gone := map[int]bool{}
		for _, id := range order {
			gone[id] = true
		}
		var left []int
		for _, a := range s.queue {
			left = append(left, a.Job.ID)
		}
		var want []int
		for id := range 5 {
			if !gone[id] {
				want = append(want, id)
			}
		}
		if fmt.Sprint(left) != fmt.Sprint(want) {
			t.Errorf("finishing %v: queue %v, want %v", order, left, want)
		}
		var fin []done
		s.finished.each(func(d *done) { fin = append(fin, *d) })
		if len(fin) != len(order) || len(s.index) != 5-len(order) || s.window.Done != len(order) || len(s.finishing) != 0 {
			t.Errorf("finishing %v: %d records, %d indexed, window done %d, %d still listed", order, len(fin), len(s.index), s.window.Done, len(s.finishing))
		}
		for _, d := range fin {
			if !gone[d.id] || d.finish != 600 {
				t.Errorf("finishing %v: record %+v", order, d)
			}
		}
	}
}
