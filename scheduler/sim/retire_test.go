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

// unsorted yields its jobs in the order given, not by arrival.
type unsorted struct {
	jobs []*scheduler.Job
	i    int
}

func (u *unsorted) Next() (*scheduler.Job, bool) {
	if u.i == len(u.jobs) {
		return nil, false
	}
	u.i++
	return u.jobs[u.i-1], true
}

func (u *unsorted) Describe() string { return "unsorted" }

// TestRun_FIFOSortsJobsAdmittedOutOfOrder: under FIFO the simulator tells
// the policy when its queue is in arrival order already (so it is not read
// again); a source that yields jobs out of arrival order must still be
// offered in arrival order. Five jobs, all admitted at the first round, on
// one GPU (so the order decides every JCT), give the same results from a
// source in file order as from a List (which yields by arrival).
func TestRun_FIFOSortsJobsAdmittedOutOfOrder(t *testing.T) {
	c := scheduler.Homogeneous("one", 1, 1, 3, 62.5e9)
	mk := func() []*scheduler.Job {
		var jobs []*scheduler.Job
		for k, arrival := range []float64{10, 200, 50, 250, 100} {
			j, err := scheduler.ZooJob(k, "m5", arrival, 1, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			j.Iterations = int64(600 / j.IterSeconds)
			jobs = append(jobs, j)
		}
		return jobs
	}
	cfg := Config{Cluster: &c, Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All}
	got, err := simulate(cfg, &unsorted{jobs: mk()})
	if err != nil {
		t.Fatal(err)
	}
	want, err := simulate(cfg, &List{Jobs: mk()})
	if err != nil {
		t.Fatal(err)
	}
	g, w := fmt.Sprint(finishes(got)), fmt.Sprint(finishes(want))
	if g != w {
		t.Fatalf("finish times from a source out of order: %s; by arrival: %s", g, w)
	}
}

// finishes is each job's finish time, by id.
func finishes(res *simcore.Result) map[int]float64 {
	out := map[int]float64{}
	for _, j := range res.Jobs {
		out[j.ID] = *j.FinishS
	}
	return out
}
