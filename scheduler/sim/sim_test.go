package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/simcore"
	"github.com/synergy-sched/synergy/sensitivity"
)

func defaultCluster(t testing.TB) *scheduler.Cluster {
	c, err := scheduler.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func mustJob(t testing.TB, id int, model string, arrival float64, iters int64, gpus int) *scheduler.Job {
	j, err := scheduler.ZooJob(id, model, arrival, iters, gpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// drain reads every job of src, which must yield exactly n.
func drain(t *testing.T, src Source, n int) []*scheduler.Job {
	t.Helper()
	var jobs []*scheduler.Job
	for j, ok := src.Next(); ok; j, ok = src.Next() {
		jobs = append(jobs, j)
	}
	if len(jobs) != n {
		t.Fatalf("%d jobs, want %d", len(jobs), n)
	}
	return jobs
}

// roundChecker returns an OnRound hook that fails t (naming label) when a
// round puts a server over capacity or places a job twice or on another
// GPU count than it asked for; each, when set, then sees every placement.
func roundChecker(t *testing.T, label string, c *scheduler.Cluster, each func(j *scheduler.Job, a *scheduler.Allocation)) func(float64, *scheduler.Round, []*scheduler.Active) {
	return func(now float64, r *scheduler.Round, _ []*scheduler.Active) {
		for i, srv := range c.Servers {
			u := r.Used(i)
			if u.GPUs > srv.GPUs || u.CPUs > srv.CPUs+1e-9 || u.MemBytes > float64(srv.MemBytes)+1e-3 {
				t.Fatalf("%s at %v: %s used %+v", label, now, srv.Name, u)
			}
		}
		seen := map[int]bool{}
		r.EachPlacement(func(j *scheduler.Job, a *scheduler.Allocation) {
			if seen[j.ID] || a.Total().GPUs != j.GPUs {
				t.Fatalf("%s: job %d placed twice or on %d GPUs of %d", label, j.ID, a.Total().GPUs, j.GPUs)
			}
			seen[j.ID] = true
			if each != nil {
				each(j, a)
			}
		})
	}
}

// TestRun_ClosedForm checks the no-queueing closed form from Synergy's
// semantics: a job arriving at a with n iterations, alone on the cluster,
// finishes at ceil(a/300)·300 + ceil(n / floor(300/t))·300, where t is its
// fair-share iteration time (divided by its speed-up when it gets its
// ideal allocation).
func TestRun_ClosedForm(t *testing.T) {
	cases := []struct {
		model   string
		arrival float64
		iters   int64
		gpus    int
	}{
		{"alexnet", 1000, 10000, 1},  // fair: floor(300/0.6) = 500 per round → 20 rounds
		{"res18", 0, 1, 1},           // one round
		{"lstm", 299.5, 123456, 1},   // floor(300/0.011) = 27272 per round → 5 rounds
		{"m5", 600, 27000, 1},        // arrival on a boundary
		{"deepspeech", 1, 396, 1},    // exactly one round at fair share: floor(300/0.757) = 396
		{"res50", 7777, 5000, 4},     // 4 GPUs on one server
		{"transformer", 45, 9999, 8}, // a whole server
	}
	for _, c := range cases {
		for _, sn := range []string{"fair", "tune", "greedy"} {
			s, _ := scheduler.NewStrategy(sn)
			j := mustJob(t, 0, c.model, c.arrival, c.iters, c.gpus)
			speed := 1.0
			if sn != "fair" {
				speed = scheduler.IdealDemand(j, scheduler.ShapeOf(defaultCluster(t))).Speedup
			}
			perRound := math.Floor(300 / (j.IterSeconds / speed))
			want := math.Ceil(c.arrival/300)*300 + math.Ceil(float64(c.iters)/perRound)*300 - c.arrival
			res, err := simulate(Config{Cluster: defaultCluster(t), Strategy: s, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All}, &List{Jobs: []*scheduler.Job{j}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.JCT.MeanHours * 3600; math.Abs(got-want) > 1e-6 || res.JCT.N != 1 {
				t.Errorf("%s on %s: JCT %v s, want %v s", c.model, sn, got, want)
			}
			if d := res.QueueingDelay.MeanHours * 3600; math.Abs(d-(math.Ceil(c.arrival/300)*300-c.arrival)) > 1e-6 {
				t.Errorf("%s on %s: queueing delay %v s", c.model, sn, d)
			}
		}
	}
}

// TestRun_SameSeedSameBytes runs the same generator point twice and demands
// byte-identical JSON; a different seed must differ.
func TestRun_SameSeedSameBytes(t *testing.T) {
	run := func(seed uint64) []byte {
		g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: seed, MultiGPU: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := simulate(Config{Cluster: defaultCluster(t), Strategy: scheduler.Tune{}, Policy: scheduler.LAS{}, RoundSeconds: 300, Window: simcore.Window{First: 200, Last: 399}, FirstRoundAtZero: true}, g)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := run(7), run(7)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different output")
	}
	if bytes.Equal(a, run(8)) {
		t.Fatal("different seeds, same output")
	}
}

// TestRun_Invariants checks every round of loaded runs: no server over
// capacity, nothing placed twice, and under tune no job below its fair
// share (or its smaller ideal).
func TestRun_Invariants(t *testing.T) {
	for _, sn := range []string{"fair", "greedy", "tune"} {
		for _, pn := range []string{"fifo", "srtf", "las", "ftf"} {
			s, _ := scheduler.NewStrategy(sn)
			p, _ := scheduler.NewPolicy(pn)
			c := defaultCluster(t)
			fair := c.FairShare()
			rounds := 0
			g, _ := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 12, Split: [3]float64{40, 40, 20}, Seed: 3, MultiGPU: true, NumJobs: 400}, nil)
			cfg := Config{Cluster: c, Strategy: s, Policy: p, RoundSeconds: 300, Window: simcore.All, FirstRoundAtZero: true}
			check := roundChecker(t, sn+"/"+pn, c, func(j *scheduler.Job, a *scheduler.Allocation) {
				if sn != "tune" {
					return
				}
				tot := a.Total()
				minCPU := math.Min(fair.CPUs, j.IdealCPUsPerGPU) * float64(j.GPUs)
				minMem := math.Min(fair.MemBytes, j.IdealMemBytesPerGPU) * float64(j.GPUs)
				if tot.CPUs < minCPU-1e-9 || tot.MemBytes < minMem-1e-3 {
					t.Fatalf("job %d below fair share: %+v", j.ID, tot)
				}
			})
			cfg.OnRound = func(now float64, r *scheduler.Round, queue []*scheduler.Active) {
				rounds++
				check(now, r, queue)
			}
			res, err := simulate(cfg, g)
			if err != nil {
				t.Fatalf("%s/%s: %v", sn, pn, err)
			}
			if res.JCT.N != 400 || rounds == 0 {
				t.Errorf("%s/%s: %d jobs finished in %d rounds", sn, pn, res.JCT.N, rounds)
			}
		}
	}
}

func TestRun_CappedAndOversizedJobs(t *testing.T) {
	c := scheduler.Homogeneous("tiny", 1, 8, 4, 100e9) // 0.5 CPU per GPU fair share
	j := mustJob(t, 0, "alexnet", 0, 10, 1)
	_, err := simulate(Config{Cluster: &c, Strategy: scheduler.Greedy{}, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All}, &List{Jobs: []*scheduler.Job{j}})
	if err != nil {
		t.Fatalf("greedy with the ideal capped to the server should fit: %v", err)
	}
	big := mustJob(t, 0, "alexnet", 0, 10, 16)
	if _, err := simulate(Config{Cluster: &c, Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All}, &List{Jobs: []*scheduler.Job{big}}); err == nil || !strings.Contains(err.Error(), "needs 16 GPUs") {
		t.Errorf("16-GPU job on 8 GPUs: %v", err)
	}
}

func TestRun_StopWhenIdleAsOriginal(t *testing.T) {
	jobs := []*scheduler.Job{mustJob(t, 0, "res18", 0, 100, 1), mustJob(t, 1, "res18", 10000, 100, 1)}
	for _, stop := range []bool{false, true} {
		res, err := simulate(Config{Cluster: defaultCluster(t), Strategy: scheduler.Fair{}, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All, StopWhenIdle: stop}, &List{Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		// Job 1 arrives after the queue empties: the original stops there.
		want := 2
		if stop {
			want = 1
		}
		if res.AllJobs.N != want {
			t.Errorf("StopWhenIdle=%v: %d jobs finished, want %d", stop, res.AllJobs.N, want)
		}
	}
}

// TestRun_ProfileFeedsSimulator loads the golden profile (the output format
// of `synergy profile`) as a model and simulates jobs of it.
func TestRun_ProfileFeedsSimulator(t *testing.T) {
	p, err := sensitivity.Load("../../sensitivity/testdata/profile_v1.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	c := defaultCluster(t)
	cat := scheduler.NewCatalog(scheduler.ShapeOf(c))
	warns, err := cat.AddProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Profiled at 1–2 CPUs and up to 24 GiB: the 3-CPU, 62.5-GB fair
	// share is outside on both axes, so the job says so for each.
	if len(warns) != 2 || !strings.Contains(warns[0], "profiled with 1–2 CPUs per GPU") ||
		!strings.Contains(warns[1], "of memory per GPU, but this cluster's GPU-proportional share is 62.5GB per GPU") {
		t.Errorf("warnings %v", warns)
	}
	g, err := NewCatalogGenerator(GeneratorConfig{JobsPerHour: 9, Split: [3]float64{20, 70, 10}, Seed: 1, NumJobs: 50, Models: cat.Profiles()}, cat)
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate(Config{Cluster: c, Strategy: scheduler.Tune{}, Policy: scheduler.FIFO{}, RoundSeconds: 300, Window: simcore.All, FirstRoundAtZero: true}, g)
	if err != nil {
		t.Fatal(err)
	}
	if res.JCT.N != 50 || res.Jobs[0].Model != p.Job.Name {
		t.Errorf("%d jobs, first of model %q", res.JCT.N, res.Jobs[0].Model)
	}
	if _, err := cat.AddProfile(p); err == nil {
		t.Error("the same profile added twice")
	}
}

// simulate is RunContext without a deadline.
func simulate(cfg Config, src Source) (*simcore.Result, error) {
	return RunContext(context.Background(), cfg, src)
}
