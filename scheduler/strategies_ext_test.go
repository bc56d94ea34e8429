package scheduler_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/sim"
)

// genJobs is n jobs from Synergy's generator (9 jobs/h, split 20/70/10),
// single-GPU or multi-GPU (1/2/4/8), each with its zoo matrix.
func genJobs(t testing.TB, n int, multi bool, seed uint64) []*scheduler.Job {
	t.Helper()
	g, err := sim.NewCatalogGenerator(sim.GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: seed, MultiGPU: multi, NumJobs: n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*scheduler.Job
	for {
		j, ok := g.Next()
		if !ok {
			return jobs
		}
		jobs = append(jobs, j)
	}
}

// TestStrategies_RoundInvariants runs one round of every strategy over 300
// generator jobs on the default cluster: nothing over capacity, every job
// placed or explained, no tune-family job below its fair share.
func TestStrategies_RoundInvariants(t *testing.T) {
	c, _ := scheduler.Preset("default")
	for _, multi := range []bool{false, true} {
		jobs := genJobs(t, 300, multi, 7)
		for _, name := range scheduler.StrategyNames() {
			s, _ := scheduler.NewStrategy(name)
			r := scheduler.NewRound(&c)
			ds := scheduler.Schedule(r, s, jobs)
			if len(ds) != len(jobs) {
				t.Fatalf("%s: %d decisions for %d jobs", name, len(ds), len(jobs))
			}
			gpus := 0
			for i, d := range ds {
				if d.JobID != jobs[i].ID {
					t.Fatalf("%s: decision %d is for job %d, not %d", name, i, d.JobID, jobs[i].ID)
				}
				if !d.Placed {
					if d.Reason() == "" || len(d.Shortfalls) == 0 {
						t.Errorf("%s: job %d waiting without a reason", name, d.JobID)
					}
					continue
				}
				gpus += d.Allocation.Total().GPUs
				if name != "greedy" && name != "drf" && name != "tetris" && d.Allocation.Speedup < 1-1e-9 {
					t.Errorf("%s: job %d below fair share (speed-up %v)", name, d.JobID, d.Allocation.Speedup)
				}
			}
			for i := range c.Servers {
				if f := r.Free(i); f.GPUs < 0 || f.CPUs < -1e-6 || f.MemBytes < -1 {
					t.Errorf("%s multi=%v: server %d over capacity, free %+v", name, multi, i, f)
				}
			}
			// Single-GPU jobs: fair, tune and opt fill every GPU.
			if !multi && (name == "fair" || name == "tune" || name == "opt" || name == "drf+tune" || name == "tetris+tune") && gpus != 128 {
				t.Errorf("%s: %d GPUs used, want 128", name, gpus)
			}
		}
	}
}

// TestOpt_BoundsTuneAndFair: the LP's bound is at least what TUNE and fair
// reach on the same jobs (their allocations are feasible LP points for
// single-GPU zoo jobs, whose ideal and fair cells are grid cells), and
// OPT's own placement reaches at most the bound and at least fair.
func TestOpt_BoundsTuneAndFair(t *testing.T) {
	c, _ := scheduler.Preset("default")
	all := genJobs(t, 400, false, 1)
	// The generator's model sequence does not depend on the seed: vary the
	// jobs by starting at different points of it.
	for _, from := range []int{0, 37, 191} {
		jobs := all[from : from+200]
		plan, err := scheduler.SolveOpt(scheduler.NewRound(&c), jobs)
		if err != nil {
			t.Fatal(err)
		}
		total := func(s scheduler.Strategy) float64 {
			sum := 0.0
			for _, d := range scheduler.Schedule(scheduler.NewRound(&c), s, jobs) {
				if d.Placed {
					sum += d.Allocation.Speedup
				}
			}
			return sum
		}
		tune, fair, opt := total(scheduler.Tune{}), total(scheduler.Fair{}), total(scheduler.Opt{})
		t.Logf("jobs %d+: bound %.2f, opt %.2f, tune %.2f, fair %.2f (LP %d variables, %d constraints)", from, plan.BoundThroughput, opt, tune, fair, plan.Variables, plan.Constraints)
		if fair != 128 || math.Abs(plan.FairThroughput-128) > 1e-9 {
			t.Errorf("fair total %v, plan's fair %v; want 128", fair, plan.FairThroughput)
		}
		if plan.BoundThroughput < tune-1e-6 || plan.BoundThroughput < fair-1e-6 {
			t.Errorf("bound %v below tune %v or fair %v", plan.BoundThroughput, tune, fair)
		}
		if opt > plan.BoundThroughput+1e-6 || opt < fair-1e-6 {
			t.Errorf("opt realised %v outside [fair %v, bound %v]", opt, fair, plan.BoundThroughput)
		}
	}
}

// TestSchedulePlaced_SameRoundAsSchedule: for every strategy, placing a
// policy's offer with SchedulePlaced (the simulator's call, which stops
// once no GPU is free) leaves the round exactly as Schedule does, and
// counts Schedule's placed decisions.
func TestSchedulePlaced_SameRoundAsSchedule(t *testing.T) {
	c, _ := scheduler.Preset("default")
	for _, multi := range []bool{false, true} {
		jobs := genJobs(t, 300, multi, 3)
		offer := make([]*scheduler.Active, len(jobs))
		for k, j := range jobs {
			offer[k] = scheduler.NewActive(j, j.Speedup)
		}
		for _, name := range scheduler.StrategyNames() {
			s, _ := scheduler.NewStrategy(name)
			r1, r2 := scheduler.NewRound(&c), scheduler.NewRound(&c)
			want := 0
			for _, d := range scheduler.Schedule(r1, s, jobs) {
				if d.Placed {
					want++
				}
			}
			if got := scheduler.SchedulePlaced(r2, s, offer); got != want || want == 0 {
				t.Errorf("%s multi=%v: SchedulePlaced placed %d, Schedule %d", name, multi, got, want)
			}
			if a, b := r1.Allocations(), r2.Allocations(); !reflect.DeepEqual(a, b) {
				t.Errorf("%s multi=%v: the rounds differ (%d and %d allocations)", name, multi, len(a), len(b))
			}
		}
	}
}
