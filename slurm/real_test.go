package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/scheduler"
)

// Tests against real Slurm daemons: scripts/local-slurm.sh start (CI does
// it, with "slurm" in SYNERGY_REQUIRE). They use the cluster of SLURM_CONF
// (default: the local one) and need it free of other jobs.

const testJobPrefix = "synergy-test-"

// realSlurm returns an Exec for the local cluster, with no job of an
// earlier test left, or skips.
func realSlurm(t *testing.T) (Exec, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real Slurm daemons: not in -short")
	}
	conf := os.Getenv("SLURM_CONF")
	if conf == "" {
		conf = "/var/lib/synergy/slurm/etc/slurm.conf"
	}
	if _, err := os.Stat(conf); err != nil {
		testreq.Skip(t, "slurm", "no slurm.conf ("+err.Error()+"): run scripts/local-slurm.sh start")
	}
	x := Exec{Env: []string{"SLURM_CONF=" + conf}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := x.Run(ctx, "scontrol", "ping"); err != nil || !strings.Contains(string(out), "UP") {
		testreq.Skip(t, "slurm", "slurmctld of "+conf+" not answering: "+strings.TrimSpace(string(out))+errText(err))
	}
	// One test process at a time uses the cluster (another `make test`
	// beside this one waits here).
	testreq.Exclusive(t, "slurm")
	cancelTestJobs(t, x)
	t.Cleanup(func() { cancelTestJobs(t, x) })
	snap, err := ReadSnapshot(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range snap.Jobs {
		if j.State == "PENDING" || j.State == "RUNNING" || j.State == "CONFIGURING" || j.State == "COMPLETING" {
			t.Fatalf("the cluster of %s runs other jobs (job %d %s, %s): the tests need it to themselves", conf, j.ID, j.Name, j.State)
		}
	}
	return x, conf
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// cancelTestJobs cancels the jobs the tests submitted and waits until
// their resources are free.
func cancelTestJobs(t *testing.T, x Exec) {
	t.Helper()
	ctx := context.Background()
	snap, err := ReadSnapshot(ctx, x)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	var ids []string
	for _, j := range snap.Jobs {
		if strings.HasPrefix(j.Name, testJobPrefix) && j.State != "COMPLETED" && j.State != "CANCELLED" {
			ids = append(ids, strconv.Itoa(j.ID))
		}
	}
	if len(ids) == 0 {
		return
	}
	if _, err := x.Run(ctx, append([]string{"scancel"}, ids...)...); err != nil {
		t.Logf("cleanup: %v", err)
	}
	waitFor(t, x, 30*time.Second, "the cancelled jobs' resources to free up", func(s Snapshot) bool {
		for _, n := range s.Nodes {
			if n.AllocGPUs > 0 || n.AllocCPUs > 0 {
				return false
			}
		}
		return true
	})
}

func waitFor(t *testing.T, x Exec, limit time.Duration, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s, err := ReadSnapshot(context.Background(), x)
		if err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s (last read: %v)", limit, what, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// submitHeld submits a sleeping job with the profile, held.
func submitHeld(t *testing.T, x Exec, name, profile string, gpus int) int {
	t.Helper()
	id, _, err := Submit(context.Background(), x, SubmitRequest{Profile: profile, GPUs: gpus, Hold: true,
		Sbatch: []string{"--job-name=" + testJobPrefix + name, "--output=/dev/null", "--wrap", "sleep 600"}})
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return id
}

// detail is one node's line of scontrol show job -d.
type detail struct {
	Node   string
	CPUIDs []int
	MemMiB int64
	GPUs   int
}

var detailLine = regexp.MustCompile(`Nodes=(\S+) CPU_IDs=(\S+) Mem=(\d+) GRES=(\S*)`)

// showJob reads a running job's allocation from scontrol show job -d.
func showJob(t *testing.T, x Exec, id int) (state string, d detail) {
	t.Helper()
	out, err := x.Run(context.Background(), "scontrol", "show", "job", "-d", strconv.Itoa(id))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`JobState=(\S+)`).FindSubmatch(out); m != nil {
		state = string(m[1])
	}
	m := detailLine.FindSubmatch(out)
	if m == nil {
		return state, d
	}
	d.Node = string(m[1])
	for _, r := range strings.Split(string(m[2]), ",") {
		lo, hi, ok := strings.Cut(r, "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if ok {
			b, _ = strconv.Atoi(hi)
		}
		for c := a; c <= b; c++ {
			d.CPUIDs = append(d.CPUIDs, c)
		}
	}
	d.MemMiB, _ = strconv.ParseInt(string(m[3]), 10, 64)
	d.GPUs, err = GresGPUs(string(m[4]))
	if err != nil {
		t.Fatal(err)
	}
	return state, d
}

// runningAs waits until job id runs and checks it runs with exactly p.
func runningAs(t *testing.T, x Exec, id int, p Placement) detail {
	t.Helper()
	var d detail
	var state string
	deadline := time.Now().Add(30 * time.Second)
	for {
		state, d = showJob(t, x, id)
		if state == "RUNNING" || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if state != "RUNNING" {
		t.Fatalf("job %d is %s, not RUNNING, 30 s after its release", id, state)
	}
	if d.Node != p.Node || len(d.CPUIDs) != p.CPUs || d.MemMiB != p.MemMiB || d.GPUs != p.GPUs {
		t.Errorf("job %d runs on %s with %d CPUs %v, %d MiB, %d GPUs; placed %+v", id, d.Node, len(d.CPUIDs), d.CPUIDs, d.MemMiB, d.GPUs, p)
	}
	return d
}

func placements(t *testing.T, res *Result) map[int]Placement {
	t.Helper()
	out := map[int]Placement{}
	for _, a := range res.Applied {
		if a.Err != nil {
			t.Errorf("job %d: %v", a.Job.ID, a.Err)
		}
		if a.Placement != nil {
			out[a.Job.ID] = *a.Placement
		}
	}
	return out
}

func examplePath(t *testing.T, name string) string {
	p, err := filepath.Abs(examples + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Three profiled jobs submitted held are placed by a pass and then RUN on
// the node, with the CPUs, memory and GPUs, the pass chose: the ideal
// demand of each profile on the empty 4 × (8 GPUs, 24 CPUs, 500 GB)
// cluster (image 6 CPUs and 32 GiB, language 1 CPU and 16 GiB, audio 4
// CPUs and 64 GiB, all first fit on node1), on disjoint CPUs.
func TestReal_ProfiledJobsRunWherePlaced(t *testing.T) {
	x, _ := realSlurm(t)
	ids := map[string]int{}
	for _, name := range []string{"image", "language", "audio"} {
		ids[name] = submitHeld(t, x, name, examplePath(t, name), 0)
	}
	res, err := (&Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}}}).RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := placements(t, res)
	want := map[string]Placement{
		"image":    {Node: "node1", GPUs: 1, CPUs: 6, MemMiB: 32768},
		"language": {Node: "node1", GPUs: 1, CPUs: 1, MemMiB: 16384},
		"audio":    {Node: "node1", GPUs: 1, CPUs: 4, MemMiB: 65536},
	}
	cpus := map[int]int{}
	for name, w := range want {
		id := ids[name]
		if got[id] != w {
			t.Errorf("%s (job %d): placed %+v, want %+v", name, id, got[id], w)
			continue
		}
		for _, c := range runningAs(t, x, id, w).CPUIDs {
			if other, dup := cpus[c]; dup {
				t.Errorf("CPU %d given to jobs %d and %d", c, other, id)
			}
			cpus[c] = id
		}
	}
}

// Five 8-GPU jobs on four 8-GPU nodes: four run, one per node; the fifth
// stays held with the GPU shortfall in its comment.
func TestReal_FullClusterLeavesOneHeldWithReason(t *testing.T) {
	x, _ := realSlurm(t)
	var ids []int
	for i := 0; i < 5; i++ {
		ids = append(ids, submitHeld(t, x, "full-"+strconv.Itoa(i), examplePath(t, "language"), 8))
	}
	res, err := (&Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}}}).RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := placements(t, res)
	nodes := map[string]bool{}
	for _, id := range ids[:4] {
		p, ok := got[id]
		if !ok || nodes[p.Node] {
			t.Fatalf("job %d: placed %+v (nodes so far %v)", id, p, nodes)
		}
		nodes[p.Node] = true
		runningAs(t, x, id, p)
	}
	snap, err := ReadSnapshot(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range snap.Jobs {
		if j.ID == ids[4] {
			m, err := ParseMark(j.Comment)
			if !j.Held() || err != nil || m.Placed != nil || !strings.Contains(m.Waiting, "gpu: need 8, free 0") {
				t.Errorf("job %d: held %v, comment %q (%v)", j.ID, j.Held(), j.Comment, err)
			}
			return
		}
	}
	t.Errorf("job %d not in the queue", ids[4])
}

// crashAfterUpdate fails every scontrol release, as a bridge killed after
// its update would leave things.
type crashAfterUpdate struct{ Exec }

func (c crashAfterUpdate) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if len(argv) > 1 && argv[0] == "scontrol" && argv[1] == "release" {
		return nil, errors.New("bridge killed before its release")
	}
	return c.Exec.Run(ctx, argv...)
}

// A bridge stopped between pinning and releasing: the job stays held,
// placed in its comment; a new bridge's pass releases it where it was
// placed and gives the next job another node, so both run.
func TestReal_RestartBetweenUpdateAndRelease(t *testing.T) {
	x, _ := realSlurm(t)
	first := submitHeld(t, x, "restart-a", examplePath(t, "language"), 8)
	res, err := (&Bridge{Cmd: crashAfterUpdate{x}, Config: Config{Strategy: scheduler.Tune{}}}).RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors() != 1 {
		t.Fatalf("crashed pass: %d errors, want 1", res.Errors())
	}
	snap, err := ReadSnapshot(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	var placed Placement
	for _, j := range snap.Jobs {
		if j.ID == first {
			m, err := ParseMark(j.Comment)
			if !j.Held() || err != nil || m.Placed == nil {
				t.Fatalf("after the crash job %d: held %v, comment %q", j.ID, j.Held(), j.Comment)
			}
			placed = *m.Placed
		}
	}
	second := submitHeld(t, x, "restart-b", examplePath(t, "language"), 8)
	res, err = (&Bridge{Cmd: x, Config: Config{Strategy: scheduler.Tune{}}}).RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := placements(t, res)
	if got[first] != placed {
		t.Errorf("job %d resumed as %+v, placed %+v before the crash", first, got[first], placed)
	}
	if got[second].Node == "" || got[second].Node == placed.Node {
		t.Errorf("job %d placed %+v: on the crashed job's node %s", second, got[second], placed.Node)
	}
	runningAs(t, x, first, placed)
	runningAs(t, x, second, got[second])
}

// With slurmctld not answering (a slurm.conf naming a port nobody listens
// on) a pass fails with ErrUnreachable and changes nothing.
func TestReal_ControllerDownChangesNothing(t *testing.T) {
	x, conf := realSlurm(t)
	id := submitHeld(t, x, "down", examplePath(t, "image"), 1)
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	dead := regexp.MustCompile(`(?m)^SlurmctldPort=\d+`).ReplaceAll(data, []byte("SlurmctldPort=1"))
	deadConf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(deadConf, dead, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := ReadSnapshot(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Bridge{Cmd: Exec{Env: []string{"SLURM_CONF=" + deadConf}}, Config: Config{Strategy: scheduler.Tune{}}}).RunPass(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "slurmctld") {
		t.Fatalf("err = %v, want ErrUnreachable naming slurmctld", err)
	}
	after, err := ReadSnapshot(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	find := func(s Snapshot) Job {
		for _, j := range s.Jobs {
			if j.ID == id {
				return j
			}
		}
		return Job{}
	}
	if b, a := find(before), find(after); !a.Held() || a.Comment != b.Comment {
		t.Errorf("job %d changed: %+v -> %+v", id, b, a)
	}
}
