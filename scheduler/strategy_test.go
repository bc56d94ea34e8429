package scheduler

import (
	"math"
	"strings"
	"testing"
)

// zooJob builds a job with the scalars of a few zoo models (kept here so
// this package's tests do not import models/zoo).
func zooJob(id int, model string, gpus int) *Job {
	j := &Job{ID: id, Model: model, GPUs: gpus, Iterations: 1000}
	switch model {
	case "alexnet":
		j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup, j.IterSeconds = 12, 125e9, 2.94, 0.6
	case "res18":
		j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup, j.IterSeconds = 9, 62.5e9, 2.4, 0.64
	case "m5":
		j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup, j.IterSeconds = 6, 187.5e9, 2.5, 0.6
	case "gnmt":
		j.IdealCPUsPerGPU, j.IdealMemBytesPerGPU, j.Speedup, j.IterSeconds = 1, 20e9, 1, 0.12
	default:
		panic(model)
	}
	return j
}

// small is 2 servers × (4 GPUs, 12 CPUs, 250 GB): fair share 3 CPUs and
// 62.5 GB per GPU, as on the default cluster.
func small() *Cluster {
	c := Homogeneous("small", 2, 4, 12, 250e9)
	return &c
}

func TestIdealDemand_Caps(t *testing.T) {
	def, _ := Preset("default")
	s := ShapeOf(&def)
	cases := []struct {
		model       string
		gpus        int
		cpus, memGB float64
		speedup     float64
	}{
		{"alexnet", 1, 12, 125, 2.94},
		// 4 × 12 = 48 CPUs > 24 per server: capped to 24; speed-up on the
		// line from (12 fair CPUs, 1) to (48, 2.94): 1 + 1.94/36·12 = 1.6467
		{"alexnet", 4, 24, 500, 1 + 1.94/36*12},
		// wider than a server: capped dimensions at fair share, speed-up 1
		{"alexnet", 16, 48, 1000, 1},
		{"gnmt", 16, 16, 320, 1},
		// m5 × 4: 750 GB > 500 GB capped; CPUs 24 not capped, so the line
		// gives 1 + 1.5/12·(24−12) = 2.5 (unchanged)
		{"m5", 4, 24, 500, 2.5},
		{"res18", 2, 18, 125, 2.4},
	}
	for _, c := range cases {
		d := IdealDemand(zooJob(0, c.model, c.gpus), s)
		if d.Ideal.GPUs != c.gpus || d.Ideal.CPUs != c.cpus || d.Ideal.MemBytes != c.memGB*1e9 || math.Abs(d.Speedup-c.speedup) > 1e-9 {
			t.Errorf("%s×%d: got %+v speed-up %v, want %v CPUs %v GB speed-up %v", c.model, c.gpus, d.Ideal, d.Speedup, c.cpus, c.memGB, c.speedup)
		}
	}
}

func TestFair_FirstFitByGPUIndex(t *testing.T) {
	r := NewRound(small())
	var got []string
	for i := 0; i < 5; i++ {
		d := Fair{}.Place(r, zooJob(i, "alexnet", 1))
		if !d.Placed {
			t.Fatalf("job %d not placed: %s", i, d.Reason())
		}
		sa := d.Allocation.Servers[0]
		got = append(got, r.Cluster().Servers[sa.Server].Name)
		if sa.CPUs != 3 || sa.MemBytes != 62.5e9 || d.Allocation.Speedup != 1 {
			t.Errorf("job %d got %+v", i, sa)
		}
	}
	// 4 GPUs on server-0 first, then server-1
	if strings.Join(got, ",") != "server-0,server-0,server-0,server-0,server-1" {
		t.Errorf("placement order %v", got)
	}
	// A 4-GPU job now has 3 GPUs left: split is impossible, the caller
	// does not offer it; Schedule says why.
	ds := Schedule(r, Fair{}, []*Job{zooJob(9, "alexnet", 4)})
	if ds[0].Placed || ds[0].Reason() != "waiting: gpu: need 4, free 3 in the cluster" {
		t.Errorf("decision %q", ds[0].Reason())
	}
}

func TestGreedy_SkipsWhatDoesNotFit(t *testing.T) {
	r := NewRound(small())
	for i := 0; i < 2; i++ {
		d := Greedy{}.Place(r, zooJob(i, "alexnet", 1))
		if !d.Placed || d.Allocation.Servers[0].Server != i || d.Allocation.Speedup != 2.94 {
			t.Fatalf("job %d: %+v %s", i, d.Allocation, d.Reason())
		}
	}
	// Each server now has 0 of 12 CPUs free (12 taken) with 3 GPUs idle.
	d := Greedy{}.Place(r, zooJob(2, "alexnet", 1))
	if d.Placed {
		t.Fatal("third alexnet placed")
	}
	if want := "ideal demand did not fit: cpu: need 12, free 0 on server-0; cpu: need 12, free 0 on server-1"; d.Reason() != want {
		t.Errorf("reason %q, want %q", d.Reason(), want)
	}
	// A language job (1 CPU) still fits nowhere: 0 CPUs free.
	if d := (Greedy{}).Place(r, zooJob(3, "gnmt", 1)); d.Placed {
		t.Error("gnmt placed with no CPU free")
	}
}

func TestTune_DropsThenRevertsPeers(t *testing.T) {
	r := NewRound(small())
	a0 := Tune{}.Place(r, zooJob(0, "alexnet", 1)) // server-0: 12 CPUs, 125 GB
	a1 := Tune{}.Place(r, zooJob(1, "alexnet", 1)) // server-1: 12 CPUs, 125 GB
	if !a0.Placed || !a1.Placed || a0.Note != "ideal demand" {
		t.Fatalf("%s / %s", a0.Reason(), a1.Reason())
	}
	// Job 2 cannot get 12 CPUs, nor its fair 3 (0 free everywhere): TUNE
	// reverts job 0 (server-0 has the fewest free GPUs, 3, tied with
	// server-1 and lower id) from 12 to 3 CPUs, then places job 2 at fair.
	d := Tune{}.Place(r, zooJob(2, "alexnet", 1))
	if !d.Placed || !d.Allocation.Demoted || d.Allocation.Servers[0].Server != 0 {
		t.Fatalf("job 2: %+v %s", d.Allocation, d.Reason())
	}
	if !strings.HasPrefix(d.Reason(), "dropped to fair share and reverted 1 peers to fair share: cpu: need 12, free 0 on server-0") {
		t.Errorf("reason %q", d.Reason())
	}
	allocs := r.Allocations()
	if a := allocs[0]; !a.Reverted || !a.Demoted || a.Speedup != 1 || a.Servers[0].CPUs != 3 || a.Servers[0].MemBytes != 62.5e9 {
		t.Errorf("job 0 after revert: %+v", a)
	}
	if a := allocs[1]; a.Reverted || a.Servers[0].CPUs != 12 {
		t.Errorf("job 1 changed: %+v", a)
	}
	// server-0: 3 (job 0) + 3 (job 2) = 6 of 12 CPUs used
	if u := r.Used(0); u.CPUs != 6 || u.GPUs != 2 || u.MemBytes != 125e9 {
		t.Errorf("server-0 used %+v", u)
	}
	checkRound(t, r)
}

// TestTune_PacksManyJobs fills the small cluster with a mix and checks the
// invariants: every GPU used, nothing over capacity, nobody below fair
// share, the language jobs at their 1 CPU.
func TestTune_PacksManyJobs(t *testing.T) {
	r := NewRound(small())
	models := []string{"alexnet", "gnmt", "m5", "res18", "alexnet", "gnmt", "gnmt", "m5"}
	var jobs []*Job
	for i, m := range models {
		jobs = append(jobs, zooJob(i, m, 1))
	}
	for _, d := range Schedule(r, Tune{}, jobs) {
		if !d.Placed {
			t.Errorf("job %d: %s", d.JobID, d.Reason())
		}
	}
	if r.FreeGPUs() != 0 {
		t.Errorf("%d GPUs free", r.FreeGPUs())
	}
	checkRound(t, r)
}

// checkRound asserts the invariants of a round: no server over capacity,
// every allocation's GPUs match its job, and no job below its fair share
// (or its own smaller ideal).
func checkRound(t *testing.T, r *Round) {
	t.Helper()
	c := r.Cluster()
	for i, s := range c.Servers {
		u := r.Used(i)
		if u.GPUs > s.GPUs || u.CPUs > s.CPUs+1e-9 || u.MemBytes > float64(s.MemBytes)+1e-3 || u.GPUs < 0 || u.CPUs < -1e-9 {
			t.Errorf("%s over capacity: used %+v of %+v", s.Name, u, s)
		}
	}
	fair := r.Shape().Fair
	r.EachPlacement(func(j *Job, a *Allocation) {
		tot := a.Total()
		if tot.GPUs != j.GPUs {
			t.Errorf("job %d holds %d GPUs, wants %d", j.ID, tot.GPUs, j.GPUs)
		}
		minCPU := math.Min(fair.CPUs, j.IdealCPUsPerGPU) * float64(j.GPUs)
		minMem := math.Min(fair.MemBytes, j.IdealMemBytesPerGPU) * float64(j.GPUs)
		if tot.CPUs < minCPU-1e-9 || tot.MemBytes < minMem-1e-3 {
			t.Errorf("job %d below fair share: %+v", j.ID, tot)
		}
	})
}

// TestSchedule_EveryJobPlacedOrExplained offers more jobs than fit and
// checks that each decision either places the job or gives a reason naming
// a resource.
func TestSchedule_EveryJobPlacedOrExplained(t *testing.T) {
	models := []string{"alexnet", "gnmt", "m5", "res18"}
	for _, s := range []Strategy{Fair{}, Greedy{}, Tune{}} {
		r := NewRound(small())
		var jobs []*Job
		for i := 0; i < 14; i++ {
			jobs = append(jobs, zooJob(i, models[i%len(models)], 1+i%3))
		}
		ds := Schedule(r, s, jobs)
		if len(ds) != len(jobs) {
			t.Fatalf("%s: %d decisions for %d jobs", s.Name(), len(ds), len(jobs))
		}
		placed := 0
		for i, d := range ds {
			if d.JobID != jobs[i].ID {
				t.Errorf("%s: decision %d is for job %d", s.Name(), i, d.JobID)
			}
			if d.Placed {
				placed++
				continue
			}
			if len(d.Shortfalls) == 0 || !strings.Contains(d.Reason(), "need") {
				t.Errorf("%s: job %d not placed without a reason: %q", s.Name(), d.JobID, d.Reason())
			}
		}
		if placed == 0 {
			t.Errorf("%s placed nothing", s.Name())
		}
		checkRound(t, r)
	}
}
