package k8s

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/synergy-sched/synergy/scheduler"
)

// Event and condition reasons the scheduler writes.
const (
	// ReasonScheduled and ReasonFailedScheduling are kube-scheduler's
	// event reasons; ReasonUnschedulable its PodScheduled condition
	// reason.
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonUnschedulable    = "Unschedulable"
	// ReasonProfileInvalid: the pod's profile could not be read.
	ReasonProfileInvalid = "ProfileInvalid"
)

// Snapshot is what one scheduling pass sees.
type Snapshot struct {
	Nodes []*corev1.Node
	// Pods are all pods, bound or not, in all namespaces.
	Pods []*corev1.Pod
	// Assumed are pods this scheduler bound whose binding the snapshot
	// may not show yet, with their node.
	Assumed map[types.UID]string
}

// PassConfig is what a pass needs beyond the snapshot.
type PassConfig struct {
	SchedulerName string
	// Namespace limits the pending pods considered ("" = all); pods bound
	// in any namespace count as used.
	Namespace string
	Strategy  scheduler.Strategy
	Profiles  ProfileSource
	Placer    Placer
	// ClusterName names the cluster in messages.
	ClusterName string
}

// Action is what a pass decided for one pod or pod group.
type Action struct {
	// Pods is one pod, or the pending members of a pod group.
	Pods []*corev1.Pod
	// Nodes is, when binding, each pod's node (same order as Pods).
	Nodes []string
	// Reason and Message say why the pods wait (Nodes empty), or how they
	// were placed.
	Reason  string
	Message string
}

// Bind reports whether the action binds its pods.
func (a Action) Bind() bool { return len(a.Nodes) > 0 }

// Pass is the outcome of one scheduling pass.
type Pass struct {
	Cluster  scheduler.Cluster
	Excluded []Excluded
	Used     []scheduler.Usage
	Actions  []Action
}

// entry is one job of the queue: a pod or a pod group's pending pods.
type entry struct {
	pods  []*corev1.Pod
	group string // "" for a single pod
	ref   string // profile annotation
	gpus  int    // per pod
	job   *scheduler.Job
}

// PlanPass makes one scheduling pass over snap: the GPU nodes become the
// cluster, pods already bound (and those assumed) its used resources, and
// the pending pods that ask for cfg.SchedulerName one FIFO queue (by the
// second they came in; within a second, the pods the webhook stamped in
// its order, then the others; then namespace and name; a pod group at its
// first member's place) offered to cfg.Placer. Each queued job's CPU and memory
// demand is its pods' requests, which the webhook set from the profile;
// the profile (or zoo model) gives the speed-up and sensitivity the
// strategy reads. A pod without a profile annotation is placed by its
// requests with speed-up 1. Pods are bound only where the strategy gave
// them what they request, on one node each; otherwise they wait with the
// reason.
func PlanPass(snap Snapshot, cfg PassConfig) (Pass, error) {
	var pass Pass
	pass.Cluster, pass.Excluded = ClusterFromNodes(cfg.ClusterName, snap.Nodes)

	entries, waits := queue(snap, cfg)
	pass.Actions = append(pass.Actions, waits...)
	if len(entries) == 0 {
		return pass, nil
	}
	if len(pass.Cluster.Servers) == 0 {
		msg := "0 nodes are available: no node with allocatable " + string(ResourceGPU)
		if len(pass.Excluded) > 0 {
			var parts []string
			for _, e := range pass.Excluded {
				parts = append(parts, e.Node+": "+e.Reason)
			}
			msg = fmt.Sprintf("0/%d nodes are available: %s", len(pass.Excluded), strings.Join(parts, "; "))
		}
		for _, e := range entries {
			pass.Actions = append(pass.Actions, Action{Pods: e.pods, Reason: ReasonUnschedulable, Message: msg})
		}
		return pass, nil
	}
	shape := scheduler.ShapeOf(&pass.Cluster)
	pass.Used = usedWithAssumed(&pass.Cluster, snap)

	var jobs []*scheduler.Job
	var queued []*entry
	for _, e := range entries {
		j, err := e.build(len(jobs), cfg.Profiles, shape)
		if err != nil {
			pass.Actions = append(pass.Actions, Action{Pods: e.pods, Reason: ReasonProfileInvalid, Message: err.Error()})
			continue
		}
		e.job = j
		jobs = append(jobs, j)
		queued = append(queued, e)
	}
	if len(jobs) == 0 {
		return pass, nil
	}
	plan, err := cfg.Placer.Place(scheduler.Queue{Cluster: &pass.Cluster, InUse: pass.Used, Jobs: jobs, Strategy: cfg.Strategy})
	if err != nil {
		return pass, fmt.Errorf("place %d jobs on %d nodes: %w", len(jobs), len(pass.Cluster.Servers), err)
	}
	outcomes := make(map[int]scheduler.JobOutcome, len(plan.Jobs))
	for _, o := range plan.Jobs {
		outcomes[o.JobID] = o
	}
	// Free resources once the pass's placements are made: what a job left
	// waiting saw, give or take the jobs placed after it.
	free := freeAfter(&pass.Cluster, pass.Used)
	for _, o := range plan.Jobs {
		for _, s := range o.Servers {
			f := free[s.Server]
			free[s.Server] = scheduler.Resources{GPUs: f.GPUs - s.GPUs, CPUs: f.CPUs - s.CPUs, MemBytes: f.MemBytes - s.MemBytes}
		}
	}
	for _, e := range queued {
		o, ok := outcomes[e.job.ID]
		if !ok {
			return pass, fmt.Errorf("placement plan has no outcome for job %d (%s)", e.job.ID, e.pods[0].Name)
		}
		pass.Actions = append(pass.Actions, e.decide(o, cfg.Strategy.Name(), free))
	}
	return pass, nil
}

// queue collects the pending pods of cfg.SchedulerName into entries in
// FIFO order, and the actions for pods that cannot be queued (a pod group
// not complete, malformed group annotations).
func queue(snap Snapshot, cfg PassConfig) ([]*entry, []Action) {
	var pending []*corev1.Pod
	boundInGroup := map[string]int{}
	for _, p := range snap.Pods {
		if g := p.Annotations[AnnotationPodGroup]; g != "" && (p.Spec.NodeName != "" || snap.Assumed[p.UID] != "") && !terminal(p) {
			boundInGroup[p.Namespace+"/"+g]++
		}
		if p.Spec.SchedulerName != cfg.SchedulerName || p.Spec.NodeName != "" || terminal(p) || p.DeletionTimestamp != nil {
			continue
		}
		if cfg.Namespace != "" && p.Namespace != cfg.Namespace {
			continue
		}
		if _, ok := snap.Assumed[p.UID]; ok {
			continue
		}
		pending = append(pending, p)
	}
	slices.SortStableFunc(pending, queueOrder)
	var out []*entry
	var waits []Action
	groups := map[string]*entry{}
	sizes := map[string]int{}
	for _, p := range pending {
		group, size, err := groupSize(p)
		if err != nil {
			waits = append(waits, Action{Pods: []*corev1.Pod{p}, Reason: ReasonUnschedulable, Message: err.Error()})
			continue
		}
		e := &entry{pods: []*corev1.Pod{p}, ref: p.Annotations[AnnotationProfile], gpus: DemandOf(p).GPUs}
		if group == "" {
			out = append(out, e)
			continue
		}
		key := p.Namespace + "/" + group
		if g, ok := groups[key]; ok {
			g.pods = append(g.pods, p)
			continue
		}
		e.group = key
		groups[key] = e
		sizes[key] = size
		out = append(out, e)
	}
	// Pod groups wait until all their pods are there (pending or bound).
	kept := out[:0]
	for _, e := range out {
		if e.group == "" {
			kept = append(kept, e)
			continue
		}
		want := sizes[e.group] - boundInGroup[e.group]
		if len(e.pods) < want {
			msg := fmt.Sprintf("pod group %s: %d of %d pods pending (%d bound); waiting for the rest to be created", e.group, len(e.pods), sizes[e.group], boundInGroup[e.group])
			waits = append(waits, Action{Pods: e.pods, Reason: ReasonUnschedulable, Message: msg})
			continue
		}
		if len(e.pods) > want {
			msg := fmt.Sprintf("pod group %s: %d pods pending and %d bound, more than its size %d", e.group, len(e.pods), boundInGroup[e.group], sizes[e.group])
			waits = append(waits, Action{Pods: e.pods, Reason: ReasonUnschedulable, Message: msg})
			continue
		}
		kept = append(kept, e)
	}
	return kept, waits
}

// queueOrder orders pending pods by the time they were queued: whole
// seconds first (all creationTimestamp has); within one second, the
// stamped pods in stamp order, then the others; then by namespace and name.
func queueOrder(a, b *corev1.Pod) int {
	ta, sa := queuedAt(a)
	tb, sb := queuedAt(b)
	if c := cmp.Compare(ta.Unix(), tb.Unix()); c != 0 {
		return c
	}
	if sa != sb {
		if sa {
			return -1
		}
		return 1
	}
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// queuedAt is when the pod joined the queue: the webhook's admission time
// when it stamped the pod (nanoseconds), else its creation time (whole
// seconds).
func queuedAt(p *corev1.Pod) (t time.Time, stamped bool) {
	if v, ok := p.Annotations[AnnotationAdmitted]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t, true
		}
	}
	return p.CreationTimestamp.Time, false
}

// build makes the entry's job: the profile's job (JobFor, on the pods'
// total GPUs) with its demand replaced by what the pods request, or a
// speed-up-1 job of the requests for pods without a profile.
func (e *entry) build(id int, src ProfileSource, s scheduler.Shape) (*scheduler.Job, error) {
	var total PodDemand
	for _, p := range e.pods {
		d := DemandOf(p)
		if d.GPUs != e.gpus {
			return nil, fmt.Errorf("pod group %s: pods ask for different GPU counts (%d and %d); a group's pods must be alike", e.group, e.gpus, d.GPUs)
		}
		if ref := p.Annotations[AnnotationProfile]; ref != e.ref {
			return nil, fmt.Errorf("pod group %s: pods name different profiles (%q and %q)", e.group, e.ref, ref)
		}
		total.GPUs += d.GPUs
		total.CPUs += d.CPUs
		total.MemBytes += d.MemBytes
	}
	if total.GPUs < 1 {
		return nil, fmt.Errorf("the pod asks for no %s; synergy places GPU pods", ResourceGPU)
	}
	g := float64(total.GPUs)
	var j *scheduler.Job
	if e.ref == "" {
		j = &scheduler.Job{ID: id, Model: e.pods[0].Name, GPUs: total.GPUs, Iterations: 1, IterSeconds: 1, Speedup: 1}
	} else {
		var err error
		if j, err = JobFor(id, e.ref, src, total.GPUs, s); err != nil {
			return nil, err
		}
		j.Speedup = scheduler.IdealDemand(j, s).Speedup
	}
	// The pods' requests are what they will hold: a pod's requests cannot
	// change once it is created. The smallest positive amounts keep a pod
	// that requests nothing a valid job.
	j.IdealCPUsPerGPU = math.Max(total.CPUs/g, 0.001)
	j.IdealMemBytesPerGPU = math.Max(float64(total.MemBytes)/g, 1)
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}

// decide turns the strategy's outcome for the entry into bindings, or a
// reason to wait.
func (e *entry) decide(p scheduler.JobOutcome, strategy string, free map[string]scheduler.Resources) Action {
	a := Action{Pods: e.pods, Reason: ReasonUnschedulable}
	if !p.Placed {
		a.Message = insufficient(p, free)
		return a
	}
	// TUNE may give a job its GPU-proportional share instead of its ideal
	// (dropped, or reverted to make room); a pod cannot shrink to that.
	if !covers(p.Servers, e.job) {
		var where []string
		for _, s := range p.Servers {
			where = append(where, fmt.Sprintf("%s×%d", s.Server, s.GPUs))
		}
		a.Message = fmt.Sprintf("%s would run it at its GPU-proportional share on %s, below the %s CPUs and %s it requests (set at admission, fixed for the pod's life); waiting until its requests fit",
			strategy, strings.Join(where, " "), num(e.job.IdealCPUsPerGPU*float64(e.job.GPUs)), gbText(e.job.IdealMemBytesPerGPU*float64(e.job.GPUs)))
		if len(p.Shortfalls) > 0 {
			a.Message += ": " + insufficient(p, free)
		}
		return a
	}
	// Each pod goes whole onto one node: a server's share must be a whole
	// number of pods.
	var nodes []string
	for _, s := range p.Servers {
		if s.GPUs%e.gpus != 0 {
			var where []string
			for _, s := range p.Servers {
				where = append(where, fmt.Sprintf("%s×%d", s.Server, s.GPUs))
			}
			a.Message = fmt.Sprintf("%s found its %d GPUs only spread as %s, which does not split into whole pods of %d GPUs; waiting", strategy, e.job.GPUs, strings.Join(where, " "), e.gpus)
			return a
		}
		for k := 0; k < s.GPUs/e.gpus; k++ {
			nodes = append(nodes, s.Server)
		}
	}
	a.Nodes = nodes
	a.Reason = ReasonScheduled
	a.Message = fmt.Sprintf("%s: %s, %.2f× the GPU-proportional share's throughput", strategy, p.Note, p.Speedup)
	return a
}

// covers reports whether every server's share holds the job's requests for
// its GPUs there (to a millionth, for float sums).
func covers(servers []scheduler.ServerShare, j *scheduler.Job) bool {
	for _, s := range servers {
		g := float64(s.GPUs)
		if s.CPUs < j.IdealCPUsPerGPU*g*(1-1e-9) || s.MemBytes < j.IdealMemBytesPerGPU*g*(1-1e-9) {
			return false
		}
	}
	return true
}

// insufficient words the strategy's shortfalls as kube-scheduler does
// ("Insufficient nvidia.com/gpu"), naming the node and the amounts; a
// shortfall of the cluster as a whole lists each node's free amount.
func insufficient(p scheduler.JobOutcome, free map[string]scheduler.Resources) string {
	if len(p.Shortfalls) == 0 {
		return p.Reason
	}
	names := slices.SortedFunc(maps.Keys(free), NaturalCompare)
	var parts []string
	for _, sf := range p.Shortfalls {
		res, need, have := shortName(sf.Resource), fmtAmount(sf.Resource, sf.Need), fmtAmount(sf.Resource, sf.Free)
		if sf.Server != "" {
			parts = append(parts, fmt.Sprintf("node %s: Insufficient %s (need %s, free %s)", sf.Server, res, need, have))
			continue
		}
		var per []string
		for _, n := range names {
			per = append(per, n+" "+fmtAmount(sf.Resource, pick(free[n], sf.Resource)))
		}
		parts = append(parts, fmt.Sprintf("Insufficient %s in the cluster (need %s, free %s: %s)", res, need, have, strings.Join(per, ", ")))
	}
	return fmt.Sprintf("0/%d nodes are available: %s", len(free), strings.Join(parts, "; "))
}

// shortName is the Kubernetes name of a scheduler resource.
func shortName(r string) string {
	switch r {
	case "gpu":
		return string(ResourceGPU)
	case "mem":
		return string(corev1.ResourceMemory)
	}
	return r
}

func fmtAmount(r string, x float64) string {
	if r == "mem" {
		return gbText(x)
	}
	return num(x)
}

func pick(r scheduler.Resources, name string) float64 {
	switch name {
	case "gpu":
		return float64(r.GPUs)
	case "cpu":
		return r.CPUs
	}
	return r.MemBytes
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// usedWithAssumed is UsedOn plus the pods this scheduler bound that the
// snapshot still shows pending, each amount capped at the server's size
// (pods bound past a node's allocatable by others must not make the
// cluster invalid).
func usedWithAssumed(c *scheduler.Cluster, snap Snapshot) []scheduler.Usage {
	pods := snap.Pods
	if len(snap.Assumed) > 0 {
		pods = slices.Clone(pods)
		for i, p := range pods {
			if n, ok := snap.Assumed[p.UID]; ok && p.Spec.NodeName == "" {
				q := p.DeepCopy()
				q.Spec.NodeName = n
				pods[i] = q
			}
		}
	}
	used := UsedOn(c, pods)
	size := map[string]scheduler.Server{}
	for _, s := range c.Servers {
		size[s.Name] = s
	}
	for i := range used {
		s := size[used[i].Server]
		used[i].GPUs = min(used[i].GPUs, s.GPUs)
		used[i].CPUs = math.Min(used[i].CPUs, s.CPUs)
		used[i].MemBytes = math.Min(used[i].MemBytes, float64(s.MemBytes))
	}
	return used
}

// freeAfter is each server's free resources given used.
func freeAfter(c *scheduler.Cluster, used []scheduler.Usage) map[string]scheduler.Resources {
	out := map[string]scheduler.Resources{}
	for _, s := range c.Servers {
		out[s.Name] = scheduler.Resources{GPUs: s.GPUs, CPUs: s.CPUs, MemBytes: float64(s.MemBytes)}
	}
	for _, u := range used {
		f := out[u.Server]
		out[u.Server] = scheduler.Resources{GPUs: f.GPUs - u.GPUs, CPUs: f.CPUs - u.CPUs, MemBytes: f.MemBytes - u.MemBytes}
	}
	return out
}
