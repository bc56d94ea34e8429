package scheduler

import (
	"math"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// cpuMatrix is a per-GPU normalised matrix over CPUs only (one memory
// column at 62.5 GB).
func cpuMatrix(cpus, values []float64) *sensitivity.Matrix {
	m := &sensitivity.Matrix{CPUs: cpus, MemBytes: []float64{62.5e9}, Unit: sensitivity.UnitNormalized, PerGPU: true}
	for _, v := range values {
		m.Values = append(m.Values, []float64{v})
	}
	return m
}

func matrixJob(id, gpus int, m *sensitivity.Matrix) *Job {
	best, c, mem := m.Max()
	return &Job{ID: id, Model: "m", GPUs: gpus, Iterations: 100, IterSeconds: 1, Matrix: m,
		IdealCPUsPerGPU: c, IdealMemBytesPerGPU: mem, Speedup: best}
}

func TestSolveOpt_Arithmetic(t *testing.T) {
	// One server, 2 GPUs, 8 CPUs, 125 GB: fair share 4 CPUs, 62.5 GB per GPU.
	one := Homogeneous("one", 1, 2, 8, 125e9)
	// Concave grids: every cell lies on the upper hull.
	a := cpuMatrix([]float64{1, 4, 6}, []float64{0.4, 1, 1.3})  // +0.2/CPU to 4, +0.15/CPU above
	b := cpuMatrix([]float64{1, 4, 6}, []float64{0.7, 1, 1.05}) // +0.1/CPU to 4, +0.025/CPU above
	// Not concave: (4, 1) lies below the line from (1, 0.5) to (6, 1.6).
	hullA := cpuMatrix([]float64{1, 4, 6}, []float64{0.5, 1, 1.6})
	hullB := cpuMatrix([]float64{1, 4, 6}, []float64{0.9, 1, 1.1})
	cases := []struct {
		name      string
		cluster   Cluster
		jobs      []*Job
		bound     float64
		cpus      []float64 // per job, as placed
		speeds    []float64
		waitingID []int
	}{
		// 8 CPUs, both ≥ fair (speed 1 ⇒ ≥ 4 CPUs each): 4 + 4 → 1 + 1 = 2.
		{"fair share binds", one, []*Job{matrixJob(0, 1, a), matrixJob(1, 1, b)}, 2, []float64{4, 4}, []float64{1, 1}, nil},
		// 12 CPUs on 2 servers (PerServer 6 CPUs, 1 GPU: fair 6 CPUs):
		// both take their 6-CPU cell: 1.3 + 1.05 = 2.35.
		{"all top cells fit", Homogeneous("two", 2, 1, 6, 62.5e9), []*Job{matrixJob(0, 1, a), matrixJob(1, 1, b)}, 2.35, []float64{6, 6}, []float64{1.3, 1.05}, nil},
		// Mixing cells: B's hull is 0.9 + 0.04/CPU from 1 to 6, so fair
		// (1.0) needs 3.5 CPUs on average (½ at 1, ½ at 6); A gets the other
		// 4.5 on its hull 0.5 + 0.22/CPU: 0.5 + 0.22·3.5 = 1.27. Bound
		// 1 + 1.27 = 2.27. Rounded within each job's mean (A 4.5 CPUs: the
		// 4-CPU cell; B 3.5: none at fair, so fair share) both run at 4
		// CPUs, speed 1: realised 2 ≤ 2.27.
		{"hull mixing", one, []*Job{matrixJob(0, 1, hullA), matrixJob(1, 1, hullB)}, 2.27, []float64{4, 4}, []float64{1, 1}, nil},
		// 3 jobs on 2 GPUs: the third waits for a GPU, whatever the LP says.
		{"gpu prefix", one, []*Job{matrixJob(0, 1, a), matrixJob(1, 1, b), matrixJob(2, 1, a)}, 2, []float64{4, 4}, []float64{1, 1}, []int{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRound(&c.cluster)
			plan, err := SolveOpt(r, c.jobs)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(plan.BoundThroughput-c.bound) > 1e-6 {
				t.Errorf("bound = %v, want %v", plan.BoundThroughput, c.bound)
			}
			ds := Opt{}.PlaceAll(NewRound(&c.cluster), c.jobs)
			waiting := 0
			for i, d := range ds {
				if !d.Placed {
					if len(c.waitingID) <= waiting || c.waitingID[waiting] != d.JobID {
						t.Errorf("job %d not placed: %s", d.JobID, d.Reason())
					}
					waiting++
					continue
				}
				tot := d.Allocation.Total()
				if math.Abs(tot.CPUs-c.cpus[i]) > 1e-9 || math.Abs(d.Allocation.Speedup-c.speeds[i]) > 1e-9 {
					t.Errorf("job %d: %v CPUs speed %v, want %v CPUs speed %v (%s)", d.JobID, tot.CPUs, d.Allocation.Speedup, c.cpus[i], c.speeds[i], d.Note)
				}
			}
			if waiting != len(c.waitingID) {
				t.Errorf("%d jobs waiting, want %d", waiting, len(c.waitingID))
			}
		})
	}
}

func TestPareto_DropsDominated(t *testing.T) {
	got := pareto([]optOption{
		{4, 62.5e9, 1},
		{6, 62.5e9, 1},   // dominated by (4, 62.5, 1): more CPUs, same speed
		{6, 125e9, 1.5},  // kept
		{6, 20e9, 1.5},   // dominates the one above: less memory
		{4, 62.5e9, 1},   // duplicate
		{1, 20e9, 0.3},   // kept: cheapest
		{12, 250e9, 1.4}, // dominated by (6, 20, 1.5)
	})
	want := []optOption{{1, 20e9, 0.3}, {4, 62.5e9, 1}, {6, 20e9, 1.5}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestRoundClass(t *testing.T) {
	opts := []optOption{{2, 62.5e9, 0.5}, {4, 62.5e9, 1}, {6, 62.5e9, 1.4}, {9, 62.5e9, 2}}
	cases := []struct {
		name string
		y    []float64
		want []float64 // speeds, in member order
	}{
		// integral: 1 at 6 CPUs, 2 at 4 CPUs; faster first
		{"integral", []float64{0, 2, 1, 0}, []float64{1.4, 1, 1}},
		// 1.5 at 4 and 1.5 at 9: ⌊⌋ gives one each; the third gets the
		// fractional mass 0.5·4 + 0.5·9 = 6.5 CPUs: the fastest cell within
		// it is 6 CPUs (1.4)
		{"fractional", []float64{0, 1.5, 0, 1.5}, []float64{2, 1.4, 1}},
		// 0.5 at 2 and 0.5 at 9: mean 5.5 CPUs, fastest within at or above
		// fair is 4 CPUs (1.0)
		{"below fair", []float64{0.5, 0, 0, 0.5}, []float64{1}},
		// rounding noise
		{"noise", []float64{0, 0.9999999999, 1e-12, 0}, []float64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := &optClass{opts: opts, fair: 1, members: make([]int, len(c.want))}
			got := roundClass(cl, c.y)
			if len(got) != len(c.want) {
				t.Fatalf("got %v", got)
			}
			for i := range got {
				if got[i].speed != c.want[i] {
					t.Errorf("member %d speed %v, want %v (%v)", i, got[i].speed, c.want[i], got)
				}
			}
		})
	}
}

func TestOpt_WideJobGetsFairShareOnly(t *testing.T) {
	c := small() // 2 × 4 GPUs: a 6-GPU job is wider than a server
	a := cpuMatrix([]float64{1, 3, 6}, []float64{0.5, 1, 2})
	ds := Opt{}.PlaceAll(NewRound(c), []*Job{matrixJob(0, 6, a)})
	d := ds[0]
	if !d.Placed {
		t.Fatalf("not placed: %s", d.Reason())
	}
	if tot := d.Allocation.Total(); tot.GPUs != 6 || tot.CPUs != 18 || d.Allocation.Speedup != 1 {
		t.Errorf("got %+v speed %v, want 6 GPUs, 18 CPUs, speed 1", tot, d.Allocation.Speedup)
	}
	if len(d.Allocation.Servers) != 2 {
		t.Errorf("spread over %d servers", len(d.Allocation.Servers))
	}
}

func TestOpt_FallsBackWhenFragmented(t *testing.T) {
	// Two servers of 2 GPUs and 8 CPUs (fair 4 per GPU). Pool: 16 CPUs.
	// Three jobs want 6 CPUs: the LP gives two of them 6 (12 + 4 = 16) in
	// the pool, but on real servers 6 + 6 > 8: one must drop to fair share.
	c := Homogeneous("frag", 2, 2, 8, 250e9)
	a := cpuMatrix([]float64{2, 4, 6}, []float64{0.5, 1, 1.5})
	jobs := []*Job{matrixJob(0, 1, a), matrixJob(1, 1, a), matrixJob(2, 1, a)}
	r := NewRound(&c)
	plan, err := SolveOpt(NewRound(&c), jobs)
	if err != nil {
		t.Fatal(err)
	}
	// bound: 2 × 1.5 + 1 = 4 (CPUs 6 + 6 + 4 = 16)
	if math.Abs(plan.BoundThroughput-4) > 1e-6 {
		t.Errorf("bound %v, want 4", plan.BoundThroughput)
	}
	ds := Opt{}.PlaceAll(r, jobs)
	total := 0.0
	for _, d := range ds {
		if !d.Placed {
			t.Fatalf("job %d waiting: %s", d.JobID, d.Reason())
		}
		total += d.Allocation.Speedup
		if d.Allocation.Speedup < 1 {
			t.Errorf("job %d below fair share: %v", d.JobID, d.Allocation.Speedup)
		}
	}
	// Realised: 1.5 (6 CPUs on one server) + 1 + 1 (4 each on the other) = 3.5 ≤ 4.
	if math.Abs(total-3.5) > 1e-9 {
		t.Errorf("realised %v, want 3.5", total)
	}
	for i := range c.Servers {
		if f := r.Free(i); f.CPUs < -1e-9 || f.GPUs < 0 || f.MemBytes < 0 {
			t.Errorf("server %d over capacity: free %+v", i, f)
		}
	}
	var notes []string
	for _, d := range ds {
		notes = append(notes, d.Note)
	}
	if !strings.Contains(strings.Join(notes, "|"), "did not fit") {
		t.Errorf("no fallback explained: %q", notes)
	}
}
