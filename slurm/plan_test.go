package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

const examples = "../deploy/examples/profiles/"

// localNodes is scripts/local-slurm.sh's cluster: 4 × (8 GPUs, 24 CPUs,
// 476837 MiB = 500 GB).
func localNodes() []Node {
	var out []Node
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		out = append(out, Node{Name: n, Partitions: []string{"gpu"}, State: "idle", CPUs: 24, MemMiB: 476837, GPUs: 8})
	}
	return out
}

func heldJob(id int, profile string, gpus int) Job {
	c := ""
	if profile != "" {
		c = Mark{Profile: profile}.String()
	}
	return Job{ID: id, Name: filepath.Base(profile), Partition: "gpu", State: "PENDING", Reason: "JobHeldUser",
		Comment: c, Tasks: 1, CPUs: 1, GPUsPerNode: gpus, SubmitTime: int64(1000 + id)}
}

func tuneConfig() Config { return Config{Strategy: scheduler.Tune{}} }

func actionOf(t *testing.T, p Pass, id int) Action {
	t.Helper()
	for _, a := range p.Actions {
		if a.Job.ID == id {
			return a
		}
	}
	t.Fatalf("no action for job %d in %+v", id, p.Actions)
	return Action{}
}

// The three example profiles, held, on an empty local cluster: each is
// placed with its ideal demand per GPU on the cluster's shape (fair share
// 24/8 = 3 CPUs, 476837 MiB/8 = 62.5 GB per GPU): image 6 CPUs and
// 32 GiB, language 1 CPU and 16 GiB, audio 4 CPUs and 64 GiB (first fit:
// node1).
func TestPlanPass_ExamplesIdealDemand(t *testing.T) {
	snap := Snapshot{Nodes: localNodes(), Jobs: []Job{
		heldJob(11, examples+"image.json", 1), heldJob(12, examples+"language.json", 1), heldJob(13, examples+"audio.json", 1)}}
	pass, err := PlanPass(snap, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Placement{
		11: {Node: "node1", GPUs: 1, CPUs: 6, MemMiB: 32768},
		12: {Node: "node1", GPUs: 1, CPUs: 1, MemMiB: 16384},
		13: {Node: "node1", GPUs: 1, CPUs: 4, MemMiB: 65536},
	}
	for id, w := range want {
		a := actionOf(t, pass, id)
		if a.Kind != Place || a.Placement == nil || *a.Placement != w {
			t.Errorf("job %d: %s %+v, want place %+v", id, a.Kind, a.Placement, w)
			continue
		}
		if !strings.Contains(a.Comment, markPlaced+w.String()) || !strings.Contains(a.Comment, markProfile) || !a.Changed || a.CPUsPerTask != w.CPUs {
			t.Errorf("job %d: comment %q, cpus per task %d", id, a.Comment, a.CPUsPerTask)
		}
	}
}

// PlanPass asks scheduler.PlaceQueue the same question `synergy schedule
// --cluster C --used U` asks, for the cluster and used resources it reports:
// with node1 mostly taken by a running job and node2 by a placed job not yet
// running, the outcomes are PlaceQueue's, job for job (a job PlaceQueue
// splits over nodes waits: Slurm gives a job one shape per node).
func TestPlanPass_SameAsScheduleForItsClusterAndUsed(t *testing.T) {
	nodes := localNodes()
	nodes[0].State, nodes[0].AllocGPUs, nodes[0].AllocCPUs, nodes[0].AllocMemMiB = "mixed", 8, 20, 400000
	onTheWay := heldJob(5, examples+"image.json", 7)
	onTheWay.Reason = "Resources" // released, not started
	onTheWay.Comment = Mark{Profile: examples + "image.json", Placed: &Placement{Node: "node2", GPUs: 8, CPUs: 21, MemMiB: 300000}}.String()
	jobs := []Job{onTheWay, heldJob(21, examples+"audio.json", 2), heldJob(22, examples+"image.json", 4), heldJob(23, examples+"language.json", 2),
		heldJob(24, examples+"language.json", 8), heldJob(25, examples+"image.json", 1)}
	pass, err := PlanPass(Snapshot{Nodes: nodes, Jobs: jobs}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	wantUsed := []scheduler.Usage{
		{Server: "node1", GPUs: 8, CPUs: 20, MemBytes: 400000 * MiB},
		{Server: "node2", GPUs: 8, CPUs: 21, MemBytes: 300000 * MiB},
	}
	if len(pass.Used) != 2 || pass.Used[0] != wantUsed[0] || pass.Used[1] != wantUsed[1] {
		t.Fatalf("used = %+v, want %+v", pass.Used, wantUsed)
	}
	var sjobs []*scheduler.Job
	shape := scheduler.ShapeOf(&pass.Cluster)
	for i, j := range jobs[1:] {
		p, err := sensitivity.LoadFilled(Mark{}.Profile + j.Comment[len(markProfile):])
		if err != nil {
			t.Fatal(err)
		}
		sj, err := scheduler.JobFromProfile(i, p, shape)
		if err != nil {
			t.Fatal(err)
		}
		sj.GPUs = j.GPUsPerNode
		sjobs = append(sjobs, sj)
	}
	plan, err := scheduler.PlaceQueue(scheduler.Queue{Cluster: &pass.Cluster, InUse: pass.Used, Jobs: sjobs, Strategy: scheduler.Tune{}})
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, o := range plan.Jobs {
		a := actionOf(t, pass, jobs[1+o.JobID].ID)
		if !o.Placed {
			if a.Kind != Wait || a.Reason != o.Reason {
				t.Errorf("job %d: %s %q, want wait %q", a.Job.ID, a.Kind, a.Reason, o.Reason)
			}
			continue
		}
		if len(o.Servers) > 1 {
			if a.Kind != Wait || !strings.Contains(a.Reason, "placed across") {
				t.Errorf("job %d split over %d servers: %s %q, want a wait saying so", a.Job.ID, len(o.Servers), a.Kind, a.Reason)
			}
			continue
		}
		placed++
		s := o.Servers[0]
		if a.Kind != Place || a.Placement.Node != s.Server || a.Placement.GPUs != s.GPUs || float64(a.Placement.CPUs) != s.CPUs || a.Placement.MemMiB != int64(s.MemBytes/MiB) {
			t.Errorf("job %d: %s %+v, want %+v", a.Job.ID, a.Kind, a.Placement, s)
		}
		if s.Server == "node1" || s.Server == "node2" {
			t.Errorf("job %d booked on %s beyond what is free: %+v", a.Job.ID, s.Server, s)
		}
	}
	// audio×2 (8 CPUs) and language×2 fit node3; image×4 asks for 24
	// CPUs, 16 are left on node3, so PlaceQueue splits it over node3 and
	// node4, as it splits language×8; image×1 finds no GPU.
	if placed != 2 || actionOf(t, pass, 25).Kind != Wait {
		t.Errorf("%d placed, want 2 and job 25 waiting", placed)
	}
}

// Four 8-GPU jobs fill the cluster; a fifth waits with the GPU shortfall
// in its comment.
func TestPlanPass_FullClusterLeavesTheLastWaiting(t *testing.T) {
	var jobs []Job
	for id := 1; id <= 5; id++ {
		jobs = append(jobs, heldJob(id, examples+"language.json", 8))
	}
	pass, err := PlanPass(Snapshot{Nodes: localNodes(), Jobs: jobs}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for id := 1; id <= 4; id++ {
		a := actionOf(t, pass, id)
		if a.Kind != Place || a.Placement.GPUs != 8 || seen[a.Placement.Node] {
			t.Errorf("job %d: %s %+v", id, a.Kind, a.Placement)
			continue
		}
		seen[a.Placement.Node] = true
	}
	a := actionOf(t, pass, 5)
	if a.Kind != Wait || !strings.Contains(a.Reason, "gpu") || !strings.Contains(a.Comment, markWaiting) || !strings.Contains(a.Comment, "gpu") {
		t.Errorf("job 5: %s, reason %q, comment %q", a.Kind, a.Reason, a.Comment)
	}
}

func TestPlanPass_GarbageIn(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version": 1, "job": {"name": "x"`), 0o644); err != nil {
		t.Fatal(err)
	}
	gpusJob := heldJob(4, examples+"image.json", 0)
	gpusJob.GPUsPerJob = 2
	running := heldJob(6, examples+"image.json", 1)
	running.State, running.Reason = "RUNNING", "None"
	notHeld := heldJob(7, examples+"image.json", 1)
	notHeld.Reason = "Priority"
	otherPart := heldJob(8, "", 1)
	otherPart.Partition = "cpu"
	jobs := []Job{heldJob(1, filepath.Join(dir, "missing.json"), 1), heldJob(2, bad, 1), heldJob(3, "", 1), gpusJob,
		{ID: 5, Partition: "gpu", State: "PENDING", Reason: "JobHeldUser", Comment: "synergy:profile=/p.json synergy:placed=node1"},
		running, notHeld, otherPart}
	pass, err := PlanPass(Snapshot{Nodes: localNodes(), Jobs: jobs}, Config{Partition: "gpu", Strategy: scheduler.Tune{}})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]string{1: "missing.json: no such file", 2: "bad.json", 3: "no profile", 4: "--gpus", 5: "cannot read the comment"} {
		a := actionOf(t, pass, id)
		if a.Kind != Wait || !strings.Contains(a.Reason, want) || !strings.Contains(a.Comment, markWaiting) {
			t.Errorf("job %d: %s, reason %q, comment %q; want a wait naming %q", id, a.Kind, a.Reason, a.Comment, want)
		}
	}
	if n := len(pass.Actions); n != 5 {
		t.Errorf("%d actions, want 5 (running, not held and other partition's jobs untouched): %+v", n, pass.Actions)
	}
}

func TestPlanPass_NoGPUNodes(t *testing.T) {
	nodes := localNodes()
	for i := range nodes {
		nodes[i].GPUs = 0
	}
	nodes[3].GPUs, nodes[3].Flags = 8, []string{"DRAIN"}
	pass, err := PlanPass(Snapshot{Nodes: nodes, Jobs: []Job{heldJob(1, examples+"image.json", 1)}}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	a := actionOf(t, pass, 1)
	if a.Kind != Wait || !strings.Contains(a.Reason, "no node with GPUs") || !strings.Contains(a.Reason, "node4: state idle+drain") || !strings.Contains(a.Reason, "node1: no GPUs") {
		t.Errorf("%s %q", a.Kind, a.Reason)
	}
}

// A job placed by a pass that stopped before releasing it is released,
// not placed again, and its resources are not given to another job.
func TestPlanPass_ResumeAfterCrashBooksNothingTwice(t *testing.T) {
	nodes := localNodes()[:1]
	half := heldJob(1, examples+"language.json", 8)
	half.Comment = Mark{Profile: examples + "language.json", Placed: &Placement{Node: "node1", GPUs: 8, CPUs: 8, MemMiB: 131072}}.String()
	pass, err := PlanPass(Snapshot{Nodes: nodes, Jobs: []Job{half, heldJob(2, examples+"language.json", 1)}}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	if a := actionOf(t, pass, 1); a.Kind != Resume || a.Placement.Node != "node1" || a.Changed {
		t.Errorf("job 1: %+v", a)
	}
	if a := actionOf(t, pass, 2); a.Kind != Wait || !strings.Contains(a.Reason, "gpu") {
		t.Errorf("job 2: %s %q, want a wait for GPUs (node1's 8 are job 1's)", a.Kind, a.Reason)
	}
}

// A waiting job whose reason did not change needs no update.
func TestPlanPass_SameReasonUnchanged(t *testing.T) {
	nodes := localNodes()[:1]
	nodes[0].AllocGPUs = 8
	j := heldJob(1, examples+"image.json", 1)
	pass, err := PlanPass(Snapshot{Nodes: nodes, Jobs: []Job{j}}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	a := actionOf(t, pass, 1)
	if a.Kind != Wait || !a.Changed {
		t.Fatalf("first pass: %+v", a)
	}
	j.Comment = a.Comment
	pass, err = PlanPass(Snapshot{Nodes: nodes, Jobs: []Job{j}}, tuneConfig())
	if err != nil {
		t.Fatal(err)
	}
	if a := actionOf(t, pass, 1); a.Kind != Wait || a.Changed {
		t.Errorf("second pass: %+v", a)
	}
}
