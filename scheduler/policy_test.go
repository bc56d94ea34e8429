package scheduler

import (
	"fmt"
	"testing"
)

func active(id int, arrival float64, gpus int, iters, executed int64, iterS, speedup float64) *Active {
	j := &Job{ID: id, GPUs: gpus, Iterations: iters, ArrivalSeconds: arrival, IterSeconds: iterS, Speedup: speedup}
	a := NewActive(j, speedup)
	a.Executed = executed
	return a
}

func ids(as []*Active) string {
	s := ""
	for i, a := range as {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(a.Job.ID)
	}
	return s
}

func TestPolicies_Order(t *testing.T) {
	// Remaining seconds at fair rates: job0 1·(1000−0) = 1000,
	// job1 2·(300−100) = 400, job2 0.5·600 = 300, job3 1·500 = 500.
	// At last speed-ups (2, 1, 1, 4): 500, 400, 300, 125.
	mk := func() []*Active {
		q := []*Active{
			active(0, 10, 1, 1000, 0, 1, 2),
			active(1, 20, 2, 300, 100, 2, 1),
			active(2, 30, 4, 600, 0, 0.5, 1),
			active(3, 40, 1, 500, 0, 1, 4),
		}
		q[0].AttainedSeconds, q[1].AttainedSeconds, q[2].AttainedSeconds, q[3].AttainedSeconds = 900, 300, 0, 600
		return q
	}
	cases := []struct {
		policy Policy
		ctx    OrderContext
		want   string
	}{
		{FIFO{}, OrderContext{}, "0,1,2,3"},
		{SRTF{}, OrderContext{FairRates: true}, "2,1,3,0"},
		{SRTF{}, OrderContext{}, "3,2,1,0"},
		// LAS: attained × GPUs = 900, 600, 0, 600 → 2, 1, 3, 0 (1 before 3
		// by arrival); with 5 free GPUs it offers 2 (4 GPUs) and 3 (1 GPU),
		// skipping 1 (2 GPUs); LargestFirst keeps 2 first.
		{LAS{}, OrderContext{FreeGPUs: 8}, "2,1,3,0"},
		{LAS{}, OrderContext{FreeGPUs: 5}, "2,3"},
		{LAS{}, OrderContext{FreeGPUs: 8, LargestFirst: true}, "2,1,3,0"},
		// FTF at now = 1000, fair rates: ρ = (1000 − arrival + remaining) /
		// (iterS × iters): job0 (990+1000)/1000 = 1.99, job1 (980+400)/600
		// = 2.3, job2 (970+300)/300 = 4.23, job3 (960+500)/500 = 2.92.
		{FTF{}, OrderContext{NowSeconds: 1000, FairRates: true}, "2,3,1,0"},
		{FTF{Ascending: true}, OrderContext{NowSeconds: 1000, FairRates: true}, "0,1,3,2"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%+v", c.policy.Name(), c.ctx), func(t *testing.T) {
			if got := ids(c.policy.Order(mk(), c.ctx)); got != c.want {
				t.Errorf("order %s, want %s", got, c.want)
			}
		})
	}
}

func TestPolicies_PriorityFirstAndStable(t *testing.T) {
	q := []*Active{active(0, 0, 1, 10, 0, 1, 1), active(1, 0, 1, 10, 0, 1, 1), active(2, 5, 1, 99, 0, 1, 1)}
	q[2].Priority = 1
	// Equal keys for 0 and 1 keep their order; swap them first to see the
	// sort is stable, not by id.
	q[0], q[1] = q[1], q[0]
	if got := ids(SRTF{}.Order(q, OrderContext{FairRates: true})); got != "2,1,0" {
		t.Errorf("order %s, want 2,1,0", got)
	}
	for _, name := range PolicyNames() {
		p, err := NewPolicy(name)
		if err != nil || p.Name() != name {
			t.Errorf("NewPolicy(%s) = %v, %v", name, p, err)
		}
	}
	if _, err := NewPolicy("lifo"); err == nil {
		t.Error("NewPolicy(lifo) succeeded")
	}
}
