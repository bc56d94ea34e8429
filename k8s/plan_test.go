package k8s

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/synergy-sched/synergy/scheduler"
)

// testNode is a node with allocatable GPUs, CPUs and memory.
func testNode(name string, gpus int, cpus float64, mem int64) *corev1.Node {
	rl := corev1.ResourceList{
		ResourceGPU:           *resource.NewQuantity(int64(gpus), resource.DecimalSI),
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl.DeepCopy()}}
}

// testPod is a one-container pod asking for gpus (as a limit, the device
// plugin way) and the given CPU and memory requests (0: unset), created at
// second k.
func testPod(name, profile string, gpus int, cpus float64, mem int64, k int) *corev1.Pod {
	c := corev1.Container{Name: "train", Image: "train:latest", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
		Requests: corev1.ResourceList{},
	}}
	if cpus > 0 {
		c.Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI)
	}
	if mem > 0 {
		c.Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, k, 0, time.UTC)),
		},
		Spec: corev1.PodSpec{SchedulerName: DefaultSchedulerName, Containers: []corev1.Container{c}},
	}
	if profile != "" {
		p.Annotations = map[string]string{AnnotationProfile: profile}
	}
	return p
}

func bound(p *corev1.Pod, node string) *corev1.Pod { p.Spec.NodeName = node; return p }

// twoNodes is the tests' cluster: 2 × (4 GPUs, 16 CPUs, 128 GiB), a
// GPU-proportional share of 4 CPUs and 32 GiB per GPU.
func twoNodes() []*corev1.Node {
	return []*corev1.Node{testNode("node-1", 4, 16, 128*gib), testNode("node-0", 4, 16, 128*gib)}
}

func passConfig(t *testing.T) PassConfig {
	s, err := scheduler.NewStrategy("tune")
	if err != nil {
		t.Fatal(err)
	}
	return PassConfig{SchedulerName: DefaultSchedulerName, Strategy: s, Profiles: DirSource{Dir: exampleDir}, Placer: QueuePlacer{}, ClusterName: "test"}
}

// actionFor finds the action of pod name.
func actionFor(t *testing.T, pass Pass, name string) (Action, int) {
	t.Helper()
	for _, a := range pass.Actions {
		for i, p := range a.Pods {
			if p.Name == name {
				return a, i
			}
		}
	}
	t.Fatalf("no action for pod %s in %+v", name, pass.Actions)
	return Action{}, 0
}

func nodeOf(t *testing.T, pass Pass, name string) string {
	t.Helper()
	a, i := actionFor(t, pass, name)
	if !a.Bind() {
		t.Fatalf("pod %s waits: %s: %s", name, a.Reason, a.Message)
	}
	return a.Nodes[i]
}

func TestDemandOf_SumsContainersInitAndOverhead(t *testing.T) {
	p := testPod("p", "", 2, 3, 4*gib, 0)
	side := corev1.Container{Name: "side", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	}}}
	p.Spec.Containers = append(p.Spec.Containers, side)
	// An init container larger in CPU than the containers' sum (3.5) wins
	// on CPU only.
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("5"),
	}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	got := DemandOf(p)
	// cpu: max(3 + 0.5, 5) + 0.25 = 5.25; memory: 4 + 1 + 1 = 6 GiB.
	want := PodDemand{GPUs: 2, CPUs: 5.25, MemBytes: 6 * gib}
	if got != want {
		t.Errorf("DemandOf = %+v, want %+v", got, want)
	}
}

func TestNaturalCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"node-2", "node-10", -1},
		{"node-10", "node-2", 1},
		{"node-2", "node-2", 0},
		{"a", "b", -1},
		{"node-02", "node-2", -1}, // equal numbers: plain order, so the order is total
		{"gpu-1-b", "gpu-1-a", 1},
		{"n1", "n1x", -1},
	} {
		if got := NaturalCompare(c.a, c.b); got != c.want {
			t.Errorf("NaturalCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClusterFromNodes_OrdersByNameAndExplainsWhatItLeavesOut(t *testing.T) {
	cordoned := testNode("node-3", 4, 16, 128*gib)
	cordoned.Spec.Unschedulable = true
	tainted := testNode("node-4", 4, 16, 128*gib)
	tainted.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	gpuTaint := testNode("node-5", 2, 8, 64*gib)
	gpuTaint.Spec.Taints = []corev1.Taint{{Key: string(ResourceGPU), Effect: corev1.TaintEffectNoSchedule}}
	cpuOnly := testNode("cpu-0", 0, 64, 256*gib)
	// Capacity only (no allocatable): capacity counts.
	capOnly := testNode("node-10", 8, 32, 256*gib)
	capOnly.Status.Allocatable = nil
	nodes := []*corev1.Node{capOnly, cordoned, tainted, gpuTaint, cpuOnly, testNode("node-2", 4, 16, 128*gib)}
	c, excluded := ClusterFromNodes("k", nodes)
	var names []string
	for _, s := range c.Servers {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "node-2,node-5,node-10" {
		t.Errorf("servers = %s, want node-2,node-5,node-10 (numbers compared as numbers)", got)
	}
	if s := c.Servers[2]; s.GPUs != 8 || s.CPUs != 32 || s.MemBytes != 256*gib {
		t.Errorf("node-10 from capacity = %+v", s)
	}
	want := map[string]string{
		"cpu-0":  "no allocatable nvidia.com/gpu",
		"node-3": "cordoned (spec.unschedulable)",
		"node-4": "taint node.kubernetes.io/not-ready:NoSchedule",
	}
	if len(excluded) != len(want) {
		t.Errorf("excluded = %+v, want %v", excluded, want)
	}
	for _, e := range excluded {
		if want[e.Node] != e.Reason {
			t.Errorf("excluded %s: %q, want %q", e.Node, e.Reason, want[e.Node])
		}
	}
}

func TestUsedOn_SumsBoundNonTerminalPods(t *testing.T) {
	c, _ := ClusterFromNodes("k", twoNodes())
	done := bound(testPod("done", "", 1, 8, 8*gib, 0), "node-0")
	done.Status.Phase = corev1.PodSucceeded
	other := bound(testPod("other", "", 1, 1, gib, 0), "elsewhere")
	pods := []*corev1.Pod{
		bound(testPod("a", "", 1, 2, 4*gib, 0), "node-1"),
		bound(testPod("b", "", 2, 3, 8*gib, 0), "node-1"),
		testPod("pending", "", 1, 1, gib, 0),
		done, other,
	}
	got := UsedOn(&c, pods)
	want := []scheduler.Usage{{Server: "node-1", GPUs: 3, CPUs: 5, MemBytes: float64(12 * gib)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UsedOn = %+v, want %+v", got, want)
	}
}

func TestPatchFor_SetsRequestsAndLimitsOnGPUContainersOnly(t *testing.T) {
	c, _ := ClusterFromNodes("k", twoNodes())
	shape := scheduler.ShapeOf(&c)
	pod := testPod("p", "image", 2, 1, gib, 0)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "logs", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}})
	job, err := JobFor(0, "image", DirSource{Dir: exampleDir}, 2, shape)
	if err != nil {
		t.Fatal(err)
	}
	a, ops, err := PatchFor(pod, "image", job, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	// image: 6 CPUs and 32 GiB per GPU (smallest cell at 95% of 600
	// samples/s), × 2 GPUs = 12 CPUs, 64 GiB; 1.5× the throughput at the
	// fair share of 4 CPUs (400 samples/s).
	if a.CPUs != 12 || a.MemBytes != float64(64*gib) || math.Abs(a.Speedup-1.5) > 1e-9 {
		t.Errorf("applied %v CPUs, %v bytes, speed-up %v; want 12, 64 GiB, 1.5", a.CPUs, a.MemBytes, a.Speedup)
	}
	if a.FairCPUs != 8 || a.PodGPUs != 2 || a.JobGPUs != 2 {
		t.Errorf("applied %+v", a)
	}
	wantChanges := []Change{
		{Container: "train", Field: "requests.cpu", From: "1", To: "12"},
		{Container: "train", Field: "requests.memory", From: "1Gi", To: "64Gi"},
		{Container: "train", Field: "limits.cpu", To: "12"},
		{Container: "train", Field: "limits.memory", To: "64Gi"},
	}
	if fmt.Sprint(a.Changes) != fmt.Sprint(wantChanges) {
		t.Errorf("changes = %+v\nwant %+v", a.Changes, wantChanges)
	}
	if len(ops) != 2 || ops[0].Path != "/spec/containers/0/resources" || ops[1].Path != "/metadata/annotations/synergy-sched.github.io~1applied" {
		t.Fatalf("ops = %+v", ops)
	}
	res := ops[0].Value.(corev1.ResourceRequirements)
	if q := res.Limits[ResourceGPU]; q.Value() != 2 {
		t.Errorf("GPU limit changed: %v", q.String())
	}
	var back Applied
	if err := json.Unmarshal([]byte(ops[1].Value.(string)), &back); err != nil || back.CPUs != 12 {
		t.Errorf("applied annotation %q: %v", ops[1].Value, err)
	}
}

// review wraps pod in an AdmissionRequest.
func review(t *testing.T, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
		Namespace: pod.Namespace, Object: runtime.RawExtension{Raw: raw},
	}
}

func testWebhook() *Webhook {
	return &Webhook{
		Profiles: DirSource{Dir: exampleDir},
		Cluster: func() (scheduler.Cluster, error) {
			c, _ := ClusterFromNodes("k", twoNodes())
			return c, nil
		},
	}
}

func TestWebhookAdmit(t *testing.T) {
	wh := testWebhook()
	wh.Now = func() time.Time { return time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC) }
	t.Run("profiled pod is patched", func(t *testing.T) {
		resp := wh.Admit(review(t, testPod("p", "audio", 1, 0, 0, 0)))
		if !strings.Contains(string(resp.Patch), `"path":"/metadata/annotations/synergy-sched.github.io~1admitted","value":"2026-02-03T04:05:06.000000007Z"`) {
			t.Errorf("no admission stamp in %s", resp.Patch)
		}
		if !resp.Allowed || resp.UID != "req-1" || resp.PatchType == nil {
			t.Fatalf("response %+v", resp)
		}
		var ops []PatchOp
		if err := json.Unmarshal(resp.Patch, &ops); err != nil {
			t.Fatal(err)
		}
		// audio: 4 CPUs, 64 GiB for its 1 GPU.
		if !strings.Contains(string(resp.Patch), `"cpu":"4"`) || !strings.Contains(string(resp.Patch), `"memory":"64Gi"`) {
			t.Errorf("patch %s", resp.Patch)
		}
	})
	t.Run("pod without the annotation is not touched", func(t *testing.T) {
		resp := wh.Admit(review(t, testPod("p", "", 1, 0, 0, 0)))
		if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) > 0 {
			t.Errorf("response %+v", resp)
		}
	})
	for _, c := range []struct{ name, profile, want string }{
		{"unknown profile", "nosuch", `no nosuch.json in`},
		{"unknown zoo model", "zoo:nosuch", `zoo: no model "nosuch"`},
		{"not a name", "../etc/passwd", `not a profile name`},
	} {
		t.Run(c.name+" is admitted unchanged with a warning", func(t *testing.T) {
			resp := wh.Admit(review(t, testPod("p", c.profile, 1, 0, 0, 0)))
			if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], c.want) {
				t.Fatalf("response %+v, want a warning containing %q", resp, c.want)
			}
			if strings.Contains(string(resp.Patch), "/spec/") || !strings.Contains(string(resp.Patch), "profile-error") {
				t.Errorf("patch %s: want only the error annotation", resp.Patch)
			}
		})
	}
	t.Run("pod asking for no GPU", func(t *testing.T) {
		resp := wh.Admit(review(t, testPod("p", "image", 0, 0, 0, 0)))
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "asks for no nvidia.com/gpu") {
			t.Errorf("response %+v", resp)
		}
	})
}

func TestWebhookAdmit_MalformedProfileInDirectory(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"broken":  `{"schema_version": 1, "job": {`,
		"future":  `{"schema_version": 99}`,
		"noaxes":  `{"schema_version": 1, "gpu": {"mode": "none"}, "job": {"batch": 1}}`,
		"unknown": `{"schema_version": 1, "gpu": {"mode": "none"}, "extra": true}`,
	} {
		if err := writeFile(dir, name+".json", body); err != nil {
			t.Fatal(err)
		}
	}
	wh := testWebhook()
	wh.Profiles = DirSource{Dir: dir}
	for name, want := range map[string]string{
		"broken":  "profile is not JSON",
		"future":  "newer than this tool reads",
		"noaxes":  "axes.cpus: [] is empty",
		"unknown": "unknown field",
	} {
		resp := wh.Admit(review(t, testPod("p", name, 1, 0, 0, 0)))
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], want) {
			t.Errorf("%s: response %+v, want a warning containing %q", name, resp, want)
		}
	}
}

// TestPlanPass_PlacesTheQueueAsSynergyScheduleDoes: three profiled pods
// with the requests the webhook sets go where
//
//	synergy schedule --cluster (2 × 4 GPUs, 16 CPUs, 128 GiB) \
//	    image.json:gpus=2 audio.json language.json:gpus=2
//
// puts them (node-0×2, node-0×1, node-1×2: language skips node-0, whose
// CPUs image and audio took), and pods of another scheduler are ignored.
func TestPlanPass_PlacesTheQueueAsSynergyScheduleDoes(t *testing.T) {
	other := testPod("other", "image", 1, 0, 0, 0)
	other.Spec.SchedulerName = "default-scheduler"
	snap := Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{
		testPod("language", "language", 2, 2, 32*gib, 3),
		testPod("image", "image", 2, 12, 64*gib, 1),
		testPod("audio", "audio", 1, 4, 64*gib, 2),
		other,
	}}
	pass, err := PlanPass(snap, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for pod, want := range map[string]string{"image": "node-0", "audio": "node-0", "language": "node-1"} {
		if got := nodeOf(t, pass, pod); got != want {
			t.Errorf("%s on %s, want %s", pod, got, want)
		}
	}
	if len(pass.Actions) != 3 {
		t.Errorf("%d actions, want 3 (the other scheduler's pod is not ours): %+v", len(pass.Actions), pass.Actions)
	}
}

func TestPlanPass_WaitingPodsSayWhatIsShortWhere(t *testing.T) {
	used := []*corev1.Pod{
		bound(testPod("image", "image", 2, 12, 64*gib, 0), "node-0"),
		bound(testPod("audio", "audio", 1, 4, 64*gib, 1), "node-0"),
		bound(testPod("language", "language", 2, 2, 32*gib, 2), "node-1"),
	}
	t.Run("share short on a node", func(t *testing.T) {
		// image on 3 GPUs: capped at a node's 16 CPUs; neither that nor
		// the fair share (4 CPUs per GPU) fits: node-0 has 1 GPU and no
		// CPU left, node-1 only 2 GPUs.
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: append(used, testPod("big", "image", 3, 16, 96*gib, 5))}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "big")
		if a.Bind() || a.Reason != ReasonUnschedulable || !strings.Contains(a.Message, "node node-0: Insufficient cpu (need 4, free 0)") {
			t.Errorf("action %+v", a)
		}
	})
	t.Run("GPUs short in the cluster", func(t *testing.T) {
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: append(used, testPod("wide", "language", 4, 4, 64*gib, 5))}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "wide")
		want := "0/2 nodes are available: Insufficient nvidia.com/gpu in the cluster (need 4, free 3: node-0 1, node-1 2)"
		if a.Bind() || a.Message != want {
			t.Errorf("message %q\nwant    %q", a.Message, want)
		}
	})
	t.Run("fair share fits but the requests do not", func(t *testing.T) {
		// Both nodes keep 3 GPUs but only 4 CPUs: image's 6 CPUs do not
		// fit; TUNE would drop it to the fair 4 CPUs, which a pod that
		// requests 6 cannot take.
		pods := []*corev1.Pod{
			bound(testPod("x", "", 1, 12, gib, 0), "node-0"),
			bound(testPod("y", "", 1, 12, gib, 0), "node-1"),
			testPod("img", "image", 1, 6, 32*gib, 1),
		}
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "img")
		if a.Bind() || !strings.Contains(a.Message, "tune would run it at its GPU-proportional share on node-0×1, below the 6 CPUs") ||
			!strings.Contains(a.Message, "node node-0: Insufficient cpu (need 6, free 4)") {
			t.Errorf("message %q", a.Message)
		}
	})
	t.Run("GPUs only spread over nodes", func(t *testing.T) {
		pods := []*corev1.Pod{
			bound(testPod("x", "", 3, 1, gib, 0), "node-0"),
			bound(testPod("y", "", 3, 1, gib, 0), "node-1"),
			testPod("two", "language", 2, 2, 32*gib, 1),
		}
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "two")
		if a.Bind() || !strings.Contains(a.Message, "spread as node-0×1 node-1×1, which does not split into whole pods of 2 GPUs") {
			t.Errorf("message %q", a.Message)
		}
	})
}

func TestPlanPass_PodGroupsAreAllOrNone(t *testing.T) {
	member := func(name string, k int) *corev1.Pod {
		p := testPod(name, "language", 2, 2, 32*gib, k)
		p.Annotations[AnnotationPodGroup] = "g"
		p.Annotations[AnnotationPodGroupSize] = "3"
		return p
	}
	t.Run("incomplete group waits", func(t *testing.T) {
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{member("m0", 0), member("m1", 1)}}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "m0")
		if a.Bind() || len(a.Pods) != 2 || !strings.Contains(a.Message, "pod group ns/g: 2 of 3 pods pending") {
			t.Errorf("action %+v", a)
		}
	})
	t.Run("group that does not fit binds none", func(t *testing.T) {
		pods := []*corev1.Pod{member("m0", 0), member("m1", 1), member("m2", 2), bound(testPod("x", "", 3, 1, gib, 0), "node-1")}
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := actionFor(t, pass, "m2")
		if a.Bind() || len(a.Pods) != 3 || !strings.Contains(a.Message, "Insufficient nvidia.com/gpu in the cluster (need 6, free 5") {
			t.Errorf("action %+v", a)
		}
	})
	t.Run("group that fits binds all", func(t *testing.T) {
		pods := []*corev1.Pod{member("m0", 0), member("m1", 1), member("m2", 2), testPod("later", "language", 1, 1, 16*gib, 3)}
		pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, passConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		// 6 GPUs first-fit: node-0×4 (two pods), node-1×2 (one).
		a, _ := actionFor(t, pass, "m0")
		if !a.Bind() || strings.Join(a.Nodes, ",") != "node-0,node-0,node-1" {
			t.Errorf("action %+v", a)
		}
		if got := nodeOf(t, pass, "later"); got != "node-1" {
			t.Errorf("later on %s, want node-1", got)
		}
	})
}

func TestPlanPass_BrokenProfileWaitsAndOthersGoOn(t *testing.T) {
	pods := []*corev1.Pod{testPod("bad", "nosuch", 1, 1, gib, 0), testPod("good", "language", 1, 1, 16*gib, 1)}
	pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := actionFor(t, pass, "bad")
	if a.Bind() || a.Reason != ReasonProfileInvalid || !strings.Contains(a.Message, `profile "nosuch"`) {
		t.Errorf("bad: %+v", a)
	}
	if got := nodeOf(t, pass, "good"); got != "node-0" {
		t.Errorf("good on %s", got)
	}
}

func TestPlanPass_AssumedBindingsCountAsUsed(t *testing.T) {
	// a was bound by us a moment ago; the cache still shows it pending.
	a := testPod("a", "", 4, 1, gib, 0)
	b := testPod("b", "", 4, 1, gib, 1)
	snap := Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{a, b}, Assumed: map[types.UID]string{a.UID: "node-0"}}
	pass, err := PlanPass(snap, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(pass.Actions) != 1 {
		t.Fatalf("actions %+v: a is bound already", pass.Actions)
	}
	if got := nodeOf(t, pass, "b"); got != "node-1" {
		t.Errorf("b on %s, want node-1 (node-0's GPUs are a's)", got)
	}
}

func TestPlanPass_NamespaceAndNoNodes(t *testing.T) {
	cfg := passConfig(t)
	cfg.Namespace = "mine"
	p := testPod("p", "language", 1, 1, gib, 0)
	pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{p}}, cfg)
	if err != nil || len(pass.Actions) != 0 {
		t.Errorf("pod of namespace ns with --namespace mine: actions %+v, %v", pass.Actions, err)
	}
	cpu := testNode("cpu-0", 0, 64, 256*gib)
	pass, err = PlanPass(Snapshot{Nodes: []*corev1.Node{cpu}, Pods: []*corev1.Pod{p}}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := actionFor(t, pass, "p")
	if a.Message != "0/1 nodes are available: cpu-0: no allocatable nvidia.com/gpu" {
		t.Errorf("message %q", a.Message)
	}
}

// fakePlacer records the queue it was given and answers with a canned
// plan: the seam to scheduler.PlaceQueue.
type fakePlacer struct {
	got scheduler.Queue
	out scheduler.QueuePlan
}

func (f *fakePlacer) Place(q scheduler.Queue) (*scheduler.QueuePlan, error) {
	f.got = q
	return &f.out, nil
}

var _ Placer = (*fakePlacer)(nil)

func TestPlanPass_HandsThePlacerRequestsAsDemandAndBoundPodsAsUsed(t *testing.T) {
	f := &fakePlacer{out: scheduler.QueuePlan{Jobs: []scheduler.JobOutcome{{JobID: 0, Placed: true,
		Servers: []scheduler.ServerShare{{Server: "node-1", GPUs: 2, CPUs: 12, MemBytes: float64(64 * gib)}}, Speedup: 1.5, Note: "ideal demand"}}}}
	cfg := passConfig(t)
	cfg.Placer = f
	pods := []*corev1.Pod{bound(testPod("held", "", 1, 3, 8*gib, 0), "node-0"), testPod("image", "image", 2, 12, 64*gib, 1)}
	pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: pods}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(t, pass, "image"); got != "node-1" {
		t.Errorf("image on %s: the placer's answer is what is bound", got)
	}
	if fmt.Sprint(f.got.InUse) != fmt.Sprint([]scheduler.Usage{{Server: "node-0", GPUs: 1, CPUs: 3, MemBytes: float64(8 * gib)}}) {
		t.Errorf("in use %+v", f.got.InUse)
	}
	if f.got.Policy != nil {
		t.Errorf("policy %v, want nil (FIFO)", f.got.Policy)
	}
	j := f.got.Jobs[0]
	if j.GPUs != 2 || j.IdealCPUsPerGPU != 6 || j.IdealMemBytesPerGPU != float64(32*gib) || math.Abs(j.Speedup-1.5) > 1e-9 || j.Matrix == nil {
		t.Errorf("job %+v", j)
	}
	if names := []string{f.got.Cluster.Servers[0].Name, f.got.Cluster.Servers[1].Name}; names[0] != "node-0" || names[1] != "node-1" {
		t.Errorf("cluster order %v", names)
	}
}

func writeFile(dir, name, body string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
}

// TestPlanPass_QueueOrderIsAdmissionOrder: creationTimestamp has whole
// seconds; the webhook's admission stamp orders pods created within one.
func TestPlanPass_QueueOrderIsAdmissionOrder(t *testing.T) {
	second := testPod("a-second", "language", 4, 4, 64*gib, 0)
	first := testPod("b-first", "language", 4, 4, 64*gib, 0)
	pass, err := PlanPass(Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{second, first}}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(t, pass, "a-second"); got != "node-0" {
		t.Errorf("without admission stamps, a-second (first by name) on %s, want node-0", got)
	}
	first.Annotations[AnnotationAdmitted] = "2026-01-01T00:00:00.100000000Z"
	second.Annotations[AnnotationAdmitted] = "2026-01-01T00:00:00.200000000Z"
	pass, err = PlanPass(Snapshot{Nodes: twoNodes(), Pods: []*corev1.Pod{second, first}}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(t, pass, "b-first"); got != "node-0" {
		t.Errorf("b-first, admitted first, on %s, want node-0", got)
	}
	// A pod the webhook did not see, created in the same second: after
	// the stamped ones (its creation time has no fraction to compare).
	third := testPod("0-unstamped", "", 4, 4, 64*gib, 0)
	pass, err = PlanPass(Snapshot{Nodes: append(twoNodes(), testNode("node-2", 4, 16, 128*gib)), Pods: []*corev1.Pod{third, second, first}}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(t, pass, "0-unstamped"); got != "node-2" {
		t.Errorf("unstamped pod on %s, want node-2 (after both stamped pods of its second)", got)
	}
	// One from an earlier second goes first.
	third.CreationTimestamp = metav1.NewTime(third.CreationTimestamp.Add(-time.Second))
	pass, err = PlanPass(Snapshot{Nodes: append(twoNodes(), testNode("node-2", 4, 16, 128*gib)), Pods: []*corev1.Pod{third, second, first}}, passConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(t, pass, "0-unstamped"); got != "node-0" {
		t.Errorf("pod of the second before on %s, want node-0", got)
	}
}
