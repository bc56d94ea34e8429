package typed

import (
	"errors"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/scheduler/gavel"
)

// twoTypes: v100 servers carry 3 CPUs and 62.5 GB per GPU, k80 servers 12
// CPUs and 125 GB.
func twoTypes() scheduler.Cluster {
	c := scheduler.Cluster{Name: "mixed"}
	for _, s := range []scheduler.Server{
		{Name: "v-0", GPUs: 4, CPUs: 12, MemBytes: 250e9, GPUType: "v100"},
		{Name: "v-1", GPUs: 4, CPUs: 12, MemBytes: 250e9, GPUType: "v100"},
		{Name: "k-0", GPUs: 4, CPUs: 48, MemBytes: 500e9, GPUType: "k80"},
		{Name: "k-1", GPUs: 4, CPUs: 48, MemBytes: 500e9, GPUType: "k80"},
	} {
		c.Servers = append(c.Servers, s)
	}
	return c
}

func zooJob(t *testing.T, id int, model string, gpus int) *scheduler.Job {
	t.Helper()
	j, err := scheduler.ZooJob(id, model, 0, 1, gpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func place(t *testing.T, c scheduler.Cluster, thr *gavel.Throughputs, inUse []scheduler.Usage, jobs ...*scheduler.Job) *Plan {
	t.Helper()
	types, err := Types(&c)
	if err != nil || len(types) != 2 {
		t.Fatalf("types %v, %v", types, err)
	}
	p, err := Place(scheduler.Queue{Cluster: &c, InUse: inUse, Jobs: jobs, Strategy: scheduler.Tune{}}, types, thr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func onType(t *testing.T, o Outcome, typ, prefix string) {
	t.Helper()
	if o.Type != typ || !o.Placed || len(o.Servers) == 0 {
		t.Fatalf("job %d: type %q placed %v, want placed on %s: %s / %s", o.JobID, o.Type, o.Placed, typ, o.TypeReason, o.Reason)
	}
	for _, s := range o.Servers {
		if !strings.HasPrefix(s.Server, prefix) {
			t.Errorf("job %d on %s, not a %s server", o.JobID, s.Server, typ)
		}
	}
}

func TestImageJobToCPURichTypeSpeedBoundToFaster(t *testing.T) {
	thr, err := gavel.ParseThroughputs([]byte(`{"v100": {"('gnmt', 1)": {"null": 9}}, "k80": {"('gnmt', 1)": {"null": 3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := place(t, twoTypes(), thr, nil, zooJob(t, 0, "res18", 2), zooJob(t, 1, "gnmt", 2))
	res18, gnmt := p.Jobs[0], p.Jobs[1]
	// res18 needs 9 CPUs per GPU: the k80 servers' 12 beat the v100's 3.
	onType(t, res18, "k80", "k-")
	if res18.Source != SourceProfile || !(res18.Rates["k80"] > res18.Rates["v100"]) || !strings.Contains(res18.TypeReason, "the v100 rate") {
		t.Errorf("res18: %+v", res18.Choice)
	}
	// gnmt is in the file: 9 vs 3 steps/s.
	onType(t, gnmt, "v100", "v-")
	if gnmt.Source != SourceThroughputs || !strings.Contains(gnmt.TypeReason, "3.00× the k80 rate") {
		t.Errorf("gnmt: %+v", gnmt.Choice)
	}
}

func TestFullTypeFallsBackWithReason(t *testing.T) {
	held := []scheduler.Usage{{Server: "k-0", GPUs: 4}, {Server: "k-1", GPUs: 3}}
	p := place(t, twoTypes(), nil, held, zooJob(t, 0, "res18", 2), zooJob(t, 1, "res18", 8))
	o := p.Jobs[0]
	onType(t, o, "v100", "v-")
	if !strings.Contains(o.TypeReason, "only type with 2 free GPUs") || !strings.Contains(o.TypeReason, "k80 would be 1.37× faster") ||
		!strings.Contains(o.TypeReason, "has 1 of 2 GPUs free") {
		t.Errorf("reason %q", o.TypeReason)
	}
	w := p.Jobs[1]
	if w.Placed || w.Type != "" || !strings.Contains(w.TypeReason, "no type has 8 free GPUs (v100 6 of 8 free, k80 1 of 8 free)") {
		t.Errorf("8-GPU job: %+v", w)
	}
}

func TestEqualRatesWithoutMatrix(t *testing.T) {
	j := zooJob(t, 0, "gnmt", 1)
	j.Matrix = nil
	p := place(t, twoTypes(), nil, nil, j)
	if o := p.Jobs[0]; o.Source != SourceEqual || o.Type != "v100" || !strings.Contains(o.TypeReason, "same rate as k80 (a tie goes to the type listed first)") {
		t.Errorf("%+v", o.Choice)
	}
}

func TestBadThroughputsNameKey(t *testing.T) {
	c := twoTypes()
	types, _ := Types(&c)
	q := scheduler.Queue{Cluster: &c, Jobs: []*scheduler.Job{zooJob(t, 0, "gnmt", 1)}, Strategy: scheduler.Tune{}}
	missing, _ := gavel.ParseThroughputs([]byte(`{"v100": {"('gnmt', 1)": {"null": 9}}, "k80": {"('res18', 1)": {"null": 3}}}`))
	var te *ThroughputsError
	if _, err := Place(q, types, missing); !errors.As(err, &te) || !strings.Contains(err.Error(), `('gnmt', 1) on "k80"`) {
		t.Errorf("missing entry: %v", err)
	}
	noType, _ := gavel.ParseThroughputs([]byte(`{"v100": {"('gnmt', 1)": {"null": 9}}}`))
	if _, err := Place(q, types, noType); err == nil || !strings.Contains(err.Error(), `no worker type "k80"`) {
		t.Errorf("missing type: %v", err)
	}
	q.InUse = []scheduler.Usage{{Server: "nope", GPUs: 1}}
	var ue *scheduler.InUseError
	if _, err := Place(q, types, nil); !errors.As(err, &ue) || ue.Index != 0 {
		t.Errorf("in use: %v", err)
	}
}

func TestTypesUntypedAndPartlyTyped(t *testing.T) {
	c := scheduler.Homogeneous("plain", 2, 8, 24, 500e9)
	if ts, err := Types(&c); ts != nil || err != nil {
		t.Errorf("untyped: %v %v", ts, err)
	}
	c.Servers[0].GPUType = "a100"
	if ts, err := Types(&c); ts != nil || err != nil {
		t.Errorf("one type: %v %v", ts, err)
	}
	m := twoTypes()
	m.Servers[3].GPUType = ""
	m.Servers = append(m.Servers, scheduler.Server{Name: "x", GPUs: 1, CPUs: 1, MemBytes: 1, GPUType: "t4"})
	if _, err := Types(&m); err == nil || !strings.Contains(err.Error(), "servers[3] (k-1) has no gpu_type") {
		t.Errorf("partly typed: %v", err)
	}
}
