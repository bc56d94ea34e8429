package scheduler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func zooJobs(t *testing.T, specs ...any) []*Job {
	t.Helper()
	var out []*Job
	for k := 0; k < len(specs); k += 2 {
		j, err := ZooJob(len(out), specs[k].(string), 0, 1, specs[k+1].(int), nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// TestPlaceQueue_WaitingReasons is `synergy schedule`'s waiting case: one
// server of 2 GPUs and 6 CPUs, 1 GPU and 2 CPUs in use.
func TestPlaceQueue_WaitingReasons(t *testing.T) {
	c := Cluster{Name: "one", Servers: []Server{{Name: "box", GPUs: 2, CPUs: 6, MemBytes: 250e9}}}
	q := Queue{Cluster: &c, InUse: []Usage{{Server: "box", GPUs: 1, CPUs: 2}}, Jobs: zooJobs(t, "res18", 1, "gnmt", 2), Strategy: Greedy{}}
	plan, err := PlaceQueue(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 2 || plan.Policy != "fifo" || plan.Strategy != "greedy" || plan.FairShare != (PerGPU{CPUs: 3, MemBytes: 125e9}) {
		t.Fatalf("plan %+v", plan)
	}
	// Free: 1 GPU, 4 CPUs. res18's ideal (9 CPUs) is capped at the
	// server's 6: "cpu: need 6, free 4 on box". gnmt×2 needs 2 GPUs of 1.
	want := []struct {
		id     int
		reason string
		short  Shortfall
	}{
		{0, "ideal demand did not fit: cpu: need 6, free 4 on box", Shortfall{Resource: "cpu", Need: 6, Free: 4, Server: "box"}},
		{1, "waiting: gpu: need 2, free 1 in the cluster", Shortfall{Resource: "gpu", Need: 2, Free: 1}},
	}
	for k, w := range want {
		o := plan.Jobs[k]
		if o.JobID != w.id || o.Placed || o.Reason != w.reason || len(o.Shortfalls) != 1 || o.Shortfalls[0] != w.short || o.Speedup != 0 || o.Servers != nil {
			t.Errorf("job %d: %+v, want waiting with %q", w.id, o, w.reason)
		}
	}
	// fair share of 2 GPUs = 2 × (3 CPUs, 125 GB)
	if o := plan.Jobs[1]; o.FairCPUs != 6 || o.FairMemBytes != 250e9 {
		t.Errorf("fair share of gnmt×2: %v CPUs %v bytes", o.FairCPUs, o.FairMemBytes)
	}
	// Tune drops res18 to its fair share (3 CPUs ≤ 4 free) and places it.
	q.Strategy, q.Jobs = Tune{}, q.Jobs[:1]
	plan, err = PlaceQueue(q)
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Jobs[0]
	if !o.Placed || !o.Demoted || o.CPUs != 3 || o.Speedup != 1 || !strings.HasPrefix(o.Note, "dropped to fair share") ||
		len(o.Servers) != 1 || o.Servers[0] != (ServerShare{Server: "box", GPUs: 1, CPUs: 3, MemBytes: 125e9}) {
		t.Errorf("tune: %+v", o)
	}
}

// TestPlaceQueue_TuneRevertsAndNamesServers places two res18 (ideal 9
// CPUs: one on each server of 4 GPUs and 12 CPUs), then alexnet×4 at its
// capped ideal of 12 CPUs (3 per GPU): 3 CPUs are free on each server, so
// TUNE reverts the first res18 to its fair 3 CPUs to make room.
func TestPlaceQueue_TuneRevertsAndNamesServers(t *testing.T) {
	c := Homogeneous("lab", 2, 4, 12, 250e9)
	plan, err := PlaceQueue(Queue{Cluster: &c, Jobs: zooJobs(t, "res18", 1, "res18", 1, "alexnet", 4), Strategy: Tune{}})
	if err != nil {
		t.Fatal(err)
	}
	res18 := plan.Jobs[0]
	if !res18.Placed || !res18.Reverted || res18.CPUs != 3 || res18.Speedup != 1 || !strings.HasSuffix(res18.Note, "; later reverted to fair share to make room") {
		t.Errorf("res18 %+v", res18)
	}
	if other := plan.Jobs[1]; !other.Placed || other.Reverted || other.CPUs != 9 {
		t.Errorf("second res18 %+v", other)
	}
	alex := plan.Jobs[2]
	if !alex.Placed || alex.GPUs != 4 || alex.CPUs != 12 || alex.FairCPUs != 12 {
		t.Errorf("alexnet %+v", alex)
	}
	for _, o := range plan.Jobs {
		gpus := 0
		for _, s := range o.Servers {
			if s.Server != "server-0" && s.Server != "server-1" {
				t.Errorf("job %d on %q", o.JobID, s.Server)
			}
			gpus += s.GPUs
		}
		if gpus != o.GPUs {
			t.Errorf("job %d: %d GPUs over its servers, %d asked", o.JobID, gpus, o.GPUs)
		}
	}
}

// TestPlaceQueue_EveryJobPlacedOrExplained runs every strategy under every
// policy over a queue larger than the cluster, with some resources in use,
// and checks the invariants: one outcome per job, capacity never exceeded
// (in use included), waiting jobs say why, the same queue gives the same
// plan, and the queue is not changed.
func TestPlaceQueue_EveryJobPlacedOrExplained(t *testing.T) {
	c := Homogeneous("lab", 2, 4, 12, 250e9)
	inUse := []Usage{{Server: "server-0", GPUs: 1, CPUs: 5, MemBytes: 100e9}, {Server: "server-0", CPUs: 1}}
	for _, sn := range StrategyNames() {
		for _, pn := range PolicyNames() {
			s, _ := NewStrategy(sn)
			p, _ := NewPolicy(pn)
			jobs := zooJobs(t, "res18", 1, "alexnet", 4, "gnmt", 1, "m5", 2, "shufflenet", 1, "res50", 8, "lstm", 1, "mobilenet", 2)
			before := make([]Job, len(jobs))
			for k, j := range jobs {
				before[k] = *j
			}
			q := Queue{Cluster: &c, InUse: inUse, Jobs: jobs, Strategy: s, Policy: p}
			plan, err := PlaceQueue(q)
			if err != nil {
				t.Fatalf("%s/%s: %v", sn, pn, err)
			}
			again, _ := PlaceQueue(q)
			if !reflect.DeepEqual(plan, again) {
				t.Errorf("%s/%s: two plans of one queue differ", sn, pn)
			}
			for k, j := range jobs {
				if !reflect.DeepEqual(*j, before[k]) {
					t.Errorf("%s/%s: job %d changed", sn, pn, k)
				}
			}
			used := map[string]Resources{"server-0": {GPUs: 1, CPUs: 6, MemBytes: 100e9}}
			seen := map[int]bool{}
			for _, o := range plan.Jobs {
				if seen[o.JobID] {
					t.Errorf("%s/%s: job %d reported twice", sn, pn, o.JobID)
				}
				seen[o.JobID] = true
				if !o.Placed && (o.Reason == "" || o.Servers != nil) {
					t.Errorf("%s/%s: waiting job %d: %+v", sn, pn, o.JobID, o)
				}
				if o.Placed && o.Speedup <= 0 {
					t.Errorf("%s/%s: job %d placed at speed-up %v", sn, pn, o.JobID, o.Speedup)
				}
				for _, sh := range o.Servers {
					used[sh.Server] = used[sh.Server].Add(Resources{GPUs: sh.GPUs, CPUs: sh.CPUs, MemBytes: sh.MemBytes})
				}
			}
			if len(seen) != len(jobs) {
				t.Errorf("%s/%s: %d outcomes for %d jobs", sn, pn, len(seen), len(jobs))
			}
			for name, u := range used {
				if u.GPUs > 4 || u.CPUs > 12+1e-9 || u.MemBytes > 250e9+1e-3 {
					t.Errorf("%s/%s: %s over capacity: %+v", sn, pn, name, u)
				}
			}
			if (plan.OptBound != nil) != (sn == "opt") {
				t.Errorf("%s/%s: OPT bound %v", sn, pn, plan.OptBound)
			}
		}
	}
}

// TestPlaceQueue_LASLeavesOutWhatDoesNotFitByCount: LAS offers, in its
// order, only the jobs whose GPUs fit what is free by count (8 GPUs:
// alexnet×4 and m5×2 fit, res50×4 then does not, gnmt×1 does); the one
// left out is reported last, not offered.
func TestPlaceQueue_LASLeavesOutWhatDoesNotFitByCount(t *testing.T) {
	c := Homogeneous("lab", 2, 4, 12, 250e9)
	plan, err := PlaceQueue(Queue{Cluster: &c, Jobs: zooJobs(t, "alexnet", 4, "m5", 2, "res50", 4, "gnmt", 1), Strategy: Fair{}, Policy: LAS{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, o := range plan.Jobs {
		ids = append(ids, o.JobID)
	}
	if !reflect.DeepEqual(ids, []int{0, 1, 3, 2}) {
		t.Fatalf("outcome order %v, want [0 1 3 2]", ids)
	}
	// 4 + 2 + 1 placed: 1 GPU free for res50's 4.
	left := plan.Jobs[3]
	if left.Placed || !strings.HasPrefix(left.Reason, "not offered by policy las") || !strings.HasSuffix(left.Reason, "gpu: need 4, free 1 in the cluster") {
		t.Errorf("res50: %+v", left)
	}
}

func TestPlaceQueue_InUseErrorsNameTheEntry(t *testing.T) {
	c := Homogeneous("lab", 1, 8, 24, 500e9)
	cases := []struct {
		inUse []Usage
		index int
		want  string
	}{
		{[]Usage{{Server: "server-99", GPUs: 1}}, 0, `servers[0].server = "server-99": no such server in cluster lab`},
		{[]Usage{{Server: "server-0", GPUs: 1}, {Server: "server-0", CPUs: -1}}, 1, "servers[1]: negative usage"},
		{[]Usage{{Server: "server-0", GPUs: 9}}, 0, "servers[0]: reserve job -1: gpu: need 9, free 8 on server-0"},
		// 20 of 24 CPUs held by the first entry: 4 free.
		{[]Usage{{Server: "server-0", CPUs: 20}, {Server: "server-0", CPUs: 5}}, 1, "servers[1]: reserve job -2: cpu: need 5, free 4 on server-0"},
	}
	for _, tc := range cases {
		_, err := PlaceQueue(Queue{Cluster: &c, InUse: tc.inUse, Jobs: zooJobs(t, "res18", 1), Strategy: Tune{}})
		var ue *InUseError
		if !errors.As(err, &ue) || ue.Index != tc.index || ue.Err.Error() != tc.want || err.Error() != "in use: "+tc.want {
			t.Errorf("%+v: error %v, want in use: %s", tc.inUse, err, tc.want)
		}
	}
}

func TestPlaceQueue_BadQueues(t *testing.T) {
	c := Homogeneous("lab", 1, 8, 24, 500e9)
	jobs := zooJobs(t, "res18", 1, "gnmt", 1)
	dup := zooJobs(t, "res18", 1, "gnmt", 1)
	dup[1].ID = 0
	bad := zooJobs(t, "res18", 1)
	bad[0].GPUs = 0
	cases := []struct {
		q    Queue
		want string
	}{
		{Queue{Jobs: jobs, Strategy: Tune{}}, "no cluster"},
		{Queue{Cluster: &c, Jobs: jobs}, "no strategy"},
		{Queue{Cluster: &Cluster{Name: "empty"}, Jobs: jobs, Strategy: Tune{}}, "cluster: servers: no servers"},
		{Queue{Cluster: &c, Jobs: dup, Strategy: Tune{}}, "job 0: the same ID as jobs[0]"},
		{Queue{Cluster: &c, Jobs: bad, Strategy: Tune{}}, "job 0: gpus = 0"},
		{Queue{Cluster: &c, Jobs: []*Job{nil}, Strategy: Tune{}}, "jobs[0] is nil"},
	}
	for _, tc := range cases {
		if _, err := PlaceQueue(tc.q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	// An empty queue is a plan with no jobs.
	plan, err := PlaceQueue(Queue{Cluster: &c, Strategy: Fair{}})
	if err != nil || len(plan.Jobs) != 0 || plan.Warnings == nil {
		t.Errorf("empty queue: %+v, %v", plan, err)
	}
}

func TestParseUsage(t *testing.T) {
	u, err := ParseUsage([]byte(`{"servers": [{"server": "server-3", "gpus": 4, "cpus": 12, "mem_bytes": 250000000000}]}`))
	if err != nil || len(u) != 1 || u[0] != (Usage{Server: "server-3", GPUs: 4, CPUs: 12, MemBytes: 250e9}) {
		t.Fatalf("%+v, %v", u, err)
	}
	for in, want := range map[string]string{
		`{"servers": [{"server": "a", "gpu": 1}]}`:                `in use: line 1 col 41: json: unknown field "gpu"`,
		"{\"servers\": [\n{\"server\": \"a\", \"gpus\": \"x\"}]}": "line 2 col 28: field servers.gpus",
		``: "in use: empty file",
	} {
		if _, err := ParseUsage([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}
