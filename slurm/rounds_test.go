package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/scheduler"
)

// fullCluster is four 8-GPU jobs of the language profile running, one per
// node, placed by the bridge (8 CPUs, 128 GiB each), started at
// starts[k], and a fifth held.
func fullCluster(starts [4]int64) Snapshot {
	nodes := localNodes()
	var jobs []Job
	for k := range 4 {
		p := Placement{Node: nodes[k].Name, GPUs: 8, CPUs: 8, MemMiB: 131072}
		nodes[k].State, nodes[k].AllocGPUs, nodes[k].AllocCPUs, nodes[k].AllocMemMiB = "mixed", 8, 8, 131072
		j := heldJob(k+1, examples+"language.json", 8)
		j.State, j.Reason, j.StartTime = "RUNNING", "None", starts[k]
		j.Comment = Mark{Profile: examples + "language.json", Placed: &p}.String()
		jobs = append(jobs, j)
	}
	jobs = append(jobs, heldJob(5, examples+"language.json", 8))
	return Snapshot{Nodes: nodes, Jobs: jobs}
}

func TestPlanRound_FIFOKeepsARunningFullCluster(t *testing.T) {
	now := time.Unix(2000, 0)
	plan, err := PlanRound(fullCluster([4]int64{1500, 1500, 1500, 1500}), Config{Strategy: scheduler.Tune{}, Policy: scheduler.FIFO{}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Keep) != 4 || len(plan.Moves) != 0 {
		t.Fatalf("kept %d, moves %+v; want the four running jobs kept", len(plan.Keep), plan.Moves)
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != Wait || plan.Actions[0].Job.ID != 5 {
		t.Fatalf("actions %+v; want job 5 waiting", plan.Actions)
	}
	if plan.Attained[1] != 500 || plan.Attained[5] != 0 {
		t.Errorf("attained %v; want 500 s for the running jobs, 0 for the held one", plan.Attained)
	}
}

// Under LAS the held job (no service) runs; the running job with the most
// service (the earliest start) is paused, and the new job takes its node
// while the others stay where they are.
func TestPlanRound_LASPausesTheMostServedForANewJob(t *testing.T) {
	now := time.Unix(2000, 0)
	plan, err := PlanRound(fullCluster([4]int64{1600, 1200, 1700, 1650}), Config{Strategy: scheduler.Tune{}, Policy: scheduler.LAS{}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves) != 1 || plan.Moves[0].Job.ID != 2 || plan.Moves[0].To != nil || !strings.HasPrefix(plan.Moves[0].Why, "paused") {
		t.Fatalf("moves %+v; want job 2 (800 s of service) paused", plan.Moves)
	}
	if len(plan.Keep) != 3 {
		t.Errorf("kept %d jobs, want 3", len(plan.Keep))
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != Place || plan.Actions[0].Placement.Node != "node2" {
		t.Fatalf("actions %+v; want job 5 placed on node2, the paused job's", plan.Actions)
	}
}

// A job another, non-bridge job shares a node with is placed around it.
func TestPlanRound_OthersJobsHoldTheirResources(t *testing.T) {
	snap := Snapshot{Nodes: localNodes()[:1], Jobs: []Job{heldJob(1, examples+"language.json", 8)}}
	snap.Nodes[0].AllocGPUs, snap.Nodes[0].AllocCPUs, snap.Nodes[0].State = 1, 2, "mixed"
	plan, err := PlanRound(snap, Config{Strategy: scheduler.Tune{}}, time.Unix(2000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != Wait || !strings.Contains(plan.Actions[0].Reason, "gpu") {
		t.Fatalf("actions %+v; want the 8-GPU job waiting for the GPU another job holds", plan.Actions)
	}
}

// A running job a killed bridge left marked preempted is preempted again;
// its run, already booked, is not counted twice.
func TestPlanRound_InterruptedPreemptionAndServiceBookedOnce(t *testing.T) {
	snap := fullCluster([4]int64{1500, 1500, 1500, 1500})
	m, err := ParseMark(snap.Jobs[0].Comment)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(2000, 0)
	bookService(&m, snap.Jobs[0], now)
	bookService(&m, snap.Jobs[0], now.Add(time.Hour)) // the same run: not again
	if m.Service != 500 || m.ServiceStart != 1500 {
		t.Fatalf("booked %v@%d, want 500@1500", m.Service, m.ServiceStart)
	}
	if got := Attained(m, snap.Jobs[0], now.Add(time.Hour)); got != 500 {
		t.Errorf("attained %v after the run was booked, want 500", got)
	}
	m.Placed, m.Waiting = nil, "preempted: test"
	snap.Jobs[0].Comment = m.String()
	back, err := ParseMark(snap.Jobs[0].Comment)
	if err != nil || back.Service != 500 || back.ServiceStart != 1500 || back.Waiting != "preempted: test" {
		t.Fatalf("mark %q read back as %+v, %v", snap.Jobs[0].Comment, back, err)
	}
	plan, err := PlanRound(snap, Config{Strategy: scheduler.Tune{}}, now)
	if err != nil {
		t.Fatal(err)
	}
	var again bool
	for _, mv := range plan.Moves {
		again = again || (mv.Job.ID == 1 && mv.Why == "its preemption was interrupted")
	}
	if !again {
		t.Errorf("moves %+v; want job 1's interrupted preemption done again", plan.Moves)
	}
	for _, bad := range []string{"synergy:profile=/p synergy:service=abc@1", "synergy:profile=/p synergy:service=-1@1", "synergy:profile=/p synergy:service=5"} {
		if _, err := ParseMark(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
