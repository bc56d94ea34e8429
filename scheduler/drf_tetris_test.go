package scheduler

import (
	"math"
	"strings"
	"testing"
)

func TestDominantShare(t *testing.T) {
	def, _ := Preset("default") // 128 GPUs, 384 CPUs, 8000 GB
	total := def.Totals()
	cases := []struct {
		model string
		want  float64
	}{
		{"alexnet", 12.0 / 384}, // max(1/128, 12/384 = 0.03125, 125/8000 = 0.015625)
		{"res18", 9.0 / 384},    // max(1/128, 9/384 = 0.0234375, 62.5/8000)
		{"m5", 187.5 / 8000},    // max(1/128, 6/384, 187.5/8000 = 0.0234375)
		{"gnmt", 1.0 / 128},     // max(1/128 = 0.0078125, 1/384, 20/8000)
	}
	for _, c := range cases {
		got := DominantShare(IdealDemand(zooJob(0, c.model, 1), ShapeOf(&def)).Ideal, total)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.model, got, c.want)
		}
	}
}

func TestDRF_ReorderSmallestShareFirstStable(t *testing.T) {
	def, _ := Preset("default")
	var queue []*Active
	for i, m := range []string{"alexnet", "m5", "res18", "gnmt"} {
		j := zooJob(i, m, 1)
		j.ArrivalSeconds = float64(i)
		queue = append(queue, NewActive(j, j.Speedup))
	}
	offer := Offer(FIFO{}, DRF{}, queue, &def, OrderContext{FreeGPUs: 128})
	var got []string
	for _, a := range offer {
		got = append(got, a.Job.Model)
	}
	// gnmt 0.0078 < m5 = res18 0.0234 (tie: FIFO order, m5 arrived first)
	// < alexnet 0.03125
	if strings.Join(got, ",") != "gnmt,m5,res18,alexnet" {
		t.Errorf("order %v", got)
	}
	if queue[0].Job.Model != "alexnet" || queue[3].Job.Model != "gnmt" {
		t.Errorf("the policy's queue was reordered: %v", queue)
	}
	// Priority comes first.
	queue[0].Priority = 1
	if o := Offer(FIFO{}, DRF{}, queue, &def, OrderContext{}); o[0].Job.Model != "alexnet" {
		t.Errorf("priority job not first: %s", o[0].Job.Model)
	}
}

func TestRemainingWeightedSeconds(t *testing.T) {
	def, _ := Preset("default")
	total := def.Totals()
	j := zooJob(0, "res18", 1) // 0.64 s/iteration at fair share, speed-up 2.4
	a := NewActive(j, 2.4)
	a.Executed = 400 // 600 left
	d := IdealDemand(j, ShapeOf(&def)).Ideal
	// weight = 1/128 + 9/384 + 62.5/8000 = 0.0078125 + 0.0234375 + 0.0078125 = 0.0390625
	w := 0.0390625
	cases := []struct {
		fair bool
		want float64
	}{
		{true, w * 600 * 0.64},        // 384 s
		{false, w * 600 * 0.64 / 2.4}, // 160 s
	}
	for _, c := range cases {
		if got := RemainingWeightedSeconds(a, d, total, c.fair); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("fair=%v: %v, want %v", c.fair, got, c.want)
		}
	}
}

func TestTetris_ReorderLeastWeightedWorkFirst(t *testing.T) {
	def, _ := Preset("default")
	long := NewActive(zooJob(0, "gnmt", 1), 1)     // 1000 × 0.12 s = 120 s × (1/128 + 1/384 + 20/8000)
	short := NewActive(zooJob(1, "res18", 1), 2.4) // 1000 × 0.64 / 2.4 = 266.7 s × 0.0390625
	short.Executed = 900                           // 100 left: 26.7 s × 0.039 = 1.04 s-share
	offer := Offer(FIFO{}, Tetris{}, []*Active{long, short}, &def, OrderContext{})
	if offer[0] != short {
		t.Errorf("order %d, %d: want the job with less weighted work first", offer[0].Job.ID, offer[1].Job.ID)
	}
}

func TestTetris_PlacesOnBestAlignedServer(t *testing.T) {
	c := small() // 2 × (4 GPUs, 12 CPUs, 250 GB)
	r := NewRound(c)
	// server-0 keeps 1 GPU, 9 CPUs, 250 GB free; server-1 is empty.
	if err := r.Reserve(zooJob(90, "gnmt", 3), Allocation{JobID: 90, Servers: []ServerAlloc{{Server: 0, GPUs: 3, CPUs: 3}}}); err != nil {
		t.Fatal(err)
	}
	j := zooJob(0, "res18", 1) // 9 CPUs, 62.5 GB
	// alignment (demand/cap · free/cap):
	//   server-0: 1/4·1/4 + 9/12·9/12 + 62.5/250·250/250 = 0.0625 + 0.5625 + 0.25 = 0.875
	//   server-1: 1/4·4/4 + 9/12·12/12 + 0.25·1          = 0.25 + 0.75 + 0.25    = 1.25
	per := PerGPU{CPUs: 9, MemBytes: 62.5e9}
	if s0, s1 := r.AlignmentScore(0, per), r.AlignmentScore(1, per); math.Abs(s0-0.875) > 1e-12 || math.Abs(s1-1.25) > 1e-12 {
		t.Fatalf("scores %v, %v; want 0.875, 1.25", s0, s1)
	}
	d := Tetris{}.Place(r, j)
	if !d.Placed || d.Allocation.Servers[0].Server != 1 || d.Allocation.Speedup != 2.4 {
		t.Fatalf("got %+v (%s); want server-1 at speed-up 2.4", d.Allocation, d.Reason())
	}
	// First fit (greedy) would have taken server-0.
	r2 := NewRound(c)
	_ = r2.Reserve(zooJob(90, "gnmt", 3), Allocation{JobID: 90, Servers: []ServerAlloc{{Server: 0, GPUs: 3, CPUs: 3}}})
	if g := (Greedy{}).Place(r2, j); g.Allocation.Servers[0].Server != 0 {
		t.Errorf("greedy took server %d", g.Allocation.Servers[0].Server)
	}
}

func TestTetrisAndDRF_GreedyVersusTune(t *testing.T) {
	// One server of 4 GPUs, 12 CPUs: two alexnets (12 CPUs each ideal) —
	// the second's ideal cannot fit.
	one := Homogeneous("one", 1, 4, 12, 500e9)
	cases := []struct {
		s          Strategy
		placed     bool
		secondCPUs float64
		note       string
	}{
		{Tetris{}, false, 0, "ideal demand did not fit"},
		{DRF{}, false, 0, "ideal demand did not fit"},
		// tune: revert the first to fair (3 CPUs), the second gets 3
		{Tetris{Tune: true}, true, 3, "reverted 1 peers"},
		{DRF{Tune: true}, true, 3, "reverted 1 peers"},
	}
	for _, c := range cases {
		t.Run(c.s.Name(), func(t *testing.T) {
			r := NewRound(&one)
			if d := c.s.Place(r, zooJob(0, "alexnet", 1)); !d.Placed || d.Allocation.Total().CPUs != 12 {
				t.Fatalf("first: %+v %s", d.Allocation, d.Reason())
			}
			d := c.s.Place(r, zooJob(1, "alexnet", 1))
			if d.Placed != c.placed || !strings.Contains(d.Reason(), c.note) {
				t.Fatalf("second: placed %v, reason %q; want %v, %q", d.Placed, d.Reason(), c.placed, c.note)
			}
			if !d.Placed {
				if !strings.Contains(d.Reason(), "cpu: need 12, free 0 on server-0") {
					t.Errorf("reason %q does not name the short resource", d.Reason())
				}
				return
			}
			if got := d.Allocation.Total().CPUs; got != c.secondCPUs {
				t.Errorf("second got %v CPUs, want %v", got, c.secondCPUs)
			}
			for i := range one.Servers {
				if f := r.Free(i); f.CPUs < 0 || f.MemBytes < 0 || f.GPUs < 0 {
					t.Errorf("over capacity: %+v", f)
				}
			}
		})
	}
}

func TestNewStrategy_AllNames(t *testing.T) {
	for _, n := range StrategyNames() {
		s, err := NewStrategy(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name() != n {
			t.Errorf("NewStrategy(%q).Name() = %q", n, s.Name())
		}
	}
	if _, err := NewStrategy("drf+fair"); err == nil || !strings.Contains(err.Error(), "tetris+tune") {
		t.Errorf("unknown name error %v does not list the names", err)
	}
}
