package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/scheduler"
)

// The tests below run against a real kube-apiserver (and etcd): the one
// scripts/local-k8s.sh starts, found through $SYNERGY_KUBECONFIG or the
// script's default kubeconfig. Never $KUBECONFIG: these tests create
// nodes, and must not do so on a real cluster by accident.
const defaultKubeconfig = "/var/lib/synergy/k8s/admin.kubeconfig"

func kubeconfigPath() string {
	if p := os.Getenv("SYNERGY_KUBECONFIG"); p != "" {
		return p
	}
	return defaultKubeconfig
}

// apiServer returns a client of the test API server, or skips.
func apiServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	if testing.Short() {
		t.Skip("API server test: skipped with -short")
	}
	path := kubeconfigPath()
	if _, err := os.Stat(path); err != nil {
		testreq.Skip(t, "k8s", fmt.Sprintf("no kubeconfig at %s: start the test control plane with scripts/local-k8s.sh start (or set SYNERGY_KUBECONFIG)", path))
	}
	c, err := NewClient(path)
	if err != nil {
		testreq.Skip(t, "k8s", err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		testreq.Skip(t, "k8s", fmt.Sprintf("API server of %s not reachable: %v (scripts/local-k8s.sh start)", path, err))
	}
	// One test process at a time uses the API server (its nodes and
	// schedulers are cluster-wide): another `make test` waits here.
	testreq.Exclusive(t, "k8s")
	return c
}

// env is one test's corner of the API server: its own namespace, nodes
// labelled with its id, and everything removed at the end.
type env struct {
	t      *testing.T
	c      kubernetes.Interface
	id     string
	ns     string
	ctx    context.Context
	nodeLb string // label selector of its nodes
	nodes  []string
}

func newEnv(t *testing.T) *env {
	c := apiServer(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := "t" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e := &env{t: t, c: c, id: id, ns: "synergy-" + id, ctx: ctx, nodeLb: "synergy-test=" + id}
	t.Cleanup(cancel)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cleanup)
	return e
}

// cleanup deletes the pods (at once: no kubelet will confirm a graceful
// deletion), nodes and the namespace.
func (e *env) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	_ = e.c.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = e.c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: e.nodeLb})
	_ = e.c.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
}

// node creates a node with allocatable GPUs, CPUs and memory; its name is
// NAME-ID so that tests running at once do not collide.
func (e *env) node(name string, gpus int, cpus float64, mem int64) string {
	e.t.Helper()
	n := testNode(name+"-"+e.id, gpus, cpus, mem)
	n.Labels = map[string]string{"synergy-test": e.id}
	created, err := e.c.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	// Status is not taken on create by every version: set it through the
	// status subresource, as a kubelet does.
	created.Status = n.Status
	if _, err := e.c.CoreV1().Nodes().UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.nodes = append(e.nodes, n.Name)
	return n.Name
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	p = p.DeepCopy()
	p.Namespace, p.UID, p.CreationTimestamp = e.ns, "", metav1.Time{}
	out, err := e.c.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return out
}

func (e *env) get(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.c.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// eventually polls cond every 100 ms for up to d.
func (e *env) eventually(d time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("%s: not within %v (last: %s)", what, d, last)
}

// events returns the messages of the pod's events with reason.
func (e *env) events(pod, reason string) []string {
	e.t.Helper()
	sel := fields.Set{"involvedObject.name": pod, "reason": reason}.AsSelector().String()
	l, err := e.c.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range l.Items {
		out = append(out, ev.Message)
	}
	return out
}

// profiles stores the example profiles (and a malformed one) in a
// ConfigMap of the namespace.
func (e *env) profiles() {
	e.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "profiles"}, Data: map[string]string{
		"broken": `{"schema_version": 1, "job": {"name": "broken"`,
	}}
	for _, c := range exampleCurves {
		cm.Data[c.name] = string(exampleJSON(e.t, c.name))
	}
	if _, err := e.c.CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// webhook runs the webhook on 127.0.0.1 and registers it for the test's
// namespace only, with the policy of webhookConfiguration; it returns once
// the API server calls it.
func (e *env) webhook() {
	e.t.Helper()
	certs, err := NewServingCerts([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certs.Cert, "tls.key": certs.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			e.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	srv := &WebhookServer{
		Client: e.c, Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		NodeSelector: labels.SelectorFromSet(labels.Set{"synergy-test": e.id}), ConfigMapNamespace: e.ns, ConfigMapName: "profiles",
		Logger: testLogger(e.t, "webhook"), Ready: func(a net.Addr) { addr <- a },
	}
	go func() { done <- srv.Run(ctx) }()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-done:
		e.t.Fatalf("webhook: %v", err)
	}
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("webhook: %v", err)
		}
	})
	url := fmt.Sprintf("https://%s%s", a, WebhookPath)
	cfg := webhookConfiguration("synergy-"+e.id, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certs.CA},
		&metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}})
	if _, err := e.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(e.ctx, cfg, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
	// The API server picks up a new configuration within a moment; a
	// dry-run create shows when it calls the webhook.
	probe := testPod("probe", "zoo:lstm", 1, 0, 0, 0)
	probe.Namespace = e.ns
	e.eventually(30*time.Second, "API server calls the webhook", func() (bool, string) {
		p, err := e.c.CoreV1().Pods(e.ns).Create(e.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		_, ok := p.Annotations[AnnotationApplied]
		return ok, fmt.Sprint(p.Annotations)
	})
}

// scheduler starts a Scheduler for the test's namespace and nodes.
func (e *env) scheduler(identity, lease string, onBind func(BindRecord)) (*Scheduler, func()) {
	e.t.Helper()
	src, stopCM, err := WatchConfigMap(e.ctx, e.c, e.ns, "profiles")
	if err != nil {
		e.t.Fatal(err)
	}
	tune, _ := scheduler.NewStrategy("tune")
	cfg := SchedulerConfig{
		Namespace: e.ns, NodeSelector: labels.SelectorFromSet(labels.Set{"synergy-test": e.id}), Strategy: tune, Profiles: src,
		BatchWindow: 300 * time.Millisecond, Resync: 2 * time.Second, Identity: identity, Logger: testLogger(e.t, identity), OnBind: onBind,
	}
	if lease != "" {
		cfg.LeaseNamespace, cfg.LeaseName = e.ns, lease
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
	}
	s, err := NewScheduler(e.c, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("scheduler %s: %v", identity, err)
			}
			stopCM()
		})
	}
	e.t.Cleanup(stop)
	return s, stop
}

func testLogger(t *testing.T, who string) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil)).With("who", who)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func requests(p *corev1.Pod, c int) (cpu, mem string) {
	r := p.Spec.Containers[c].Resources
	q, m := r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory]
	return q.String(), m.String()
}

// TestAPI_WebhookSetsRequestsAndSchedulerBinds is the whole path on a real
// API server: the API server calls the webhook, which sets each profiled
// pod's requests from its profile on the nodes' shape; the scheduler binds
// the three pods where `synergy schedule` puts the same queue on the same
// cluster (node-0, node-0, node-1; see TestPlanPass_PlacesTheQueueAs...
// and the CLI's own test against `synergy schedule`); a pod without the
// annotation is neither changed nor bound; a pod that cannot fit waits
// with an event and condition naming the short resource and node; a
// malformed profile gives an event and leaves the webhook serving.
func TestAPI_WebhookSetsRequestsAndSchedulerBinds(t *testing.T) {
	e := newEnv(t)
	e.profiles()
	n0 := e.node("node-0", 4, 16, 128*gib)
	n1 := e.node("node-1", 4, 16, 128*gib)
	e.webhook()

	// Created in this order within one second: the queue order is the
	// names' order, as in synergy schedule's arguments.
	image := e.create(testPod("p1-image", "image", 2, 1, gib, 0))
	audio := e.create(testPod("p2-audio", "audio", 1, 0, 0, 0))
	lang := e.create(testPod("p3-language", "language", 2, 0, 0, 0))
	plain := testPod("plain", "", 1, 0.5, gib, 0)
	plain.Spec.SchedulerName = ""
	plain = e.create(plain)
	mine := testPod("unprofiled", "", 1, 0.5, gib, 0)
	mine = e.create(mine)

	for _, c := range []struct {
		pod      *corev1.Pod
		cpu, mem string
	}{{image, "12", "64Gi"}, {audio, "4", "64Gi"}, {lang, "2", "32Gi"}} {
		cpu, mem := requests(c.pod, 0)
		if cpu != c.cpu || mem != c.mem {
			t.Errorf("%s requests cpu %s memory %s, want %s %s (its profile's ideal on 4-GPU/16-CPU/128Gi nodes)", c.pod.Name, cpu, mem, c.cpu, c.mem)
		}
		lim := c.pod.Spec.Containers[0].Resources.Limits
		if q := lim[corev1.ResourceCPU]; q.String() != c.cpu {
			t.Errorf("%s cpu limit %s, want %s", c.pod.Name, q.String(), c.cpu)
		}
		if q := lim[ResourceGPU]; q.Value() != int64(DemandOf(c.pod).GPUs) || q.Value() == 0 {
			t.Errorf("%s GPU limit %s", c.pod.Name, q.String())
		}
		if !strings.Contains(c.pod.Annotations[AnnotationApplied], `"profile":"`+strings.SplitN(c.pod.Name, "-", 2)[1]+`"`) {
			t.Errorf("%s applied annotation %q", c.pod.Name, c.pod.Annotations[AnnotationApplied])
		}
	}
	if cpu, mem := requests(plain, 0); cpu != "500m" || mem != "1Gi" || len(plain.Annotations) != 0 {
		t.Errorf("pod without the annotation changed: requests %s %s, annotations %v", cpu, mem, plain.Annotations)
	}

	// A malformed profile: admitted unchanged, an event, the webhook goes
	// on serving (the next pod is mutated).
	broken := e.create(testPod("p4-broken", "broken", 1, 0.25, gib, 0))
	if cpu, _ := requests(broken, 0); cpu != "250m" || !strings.Contains(broken.Annotations[AnnotationError], "profile is not JSON") {
		t.Errorf("broken: requests cpu %s, annotations %v", cpu, broken.Annotations)
	}
	e.eventually(10*time.Second, "webhook's ProfileInvalid event", func() (bool, string) {
		ev := e.events("p4-broken", ReasonProfileInvalid)
		return len(ev) > 0 && strings.Contains(ev[0], `profile "broken"`), fmt.Sprint(ev)
	})
	after := e.create(testPod("p5-after", "zoo:lstm", 1, 0, 0, 0))
	if cpu, mem := requests(after, 0); cpu != "1" || mem != "20G" { // the zoo counts decimal GB
		t.Errorf("pod after the broken one: requests %s %s, want zoo lstm's 1 CPU, 20 GB", cpu, mem)
	}
	zero := int64(0)
	if err := e.c.CoreV1().Pods(e.ns).Delete(e.ctx, "p5-after", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}

	s, _ := e.scheduler("replica-a", "", nil)
	want := map[string]string{"p1-image": n0, "p2-audio": n0, "p3-language": n1, "unprofiled": n1}
	e.eventually(30*time.Second, "the profiled pods bound", func() (bool, string) {
		var got []string
		ok := true
		for name, node := range want {
			p := e.get(name)
			got = append(got, name+"@"+p.Spec.NodeName)
			ok = ok && p.Spec.NodeName == node
		}
		return ok, strings.Join(got, " ")
	})
	// The scheduler says why the broken one waits; the other scheduler's
	// pod is not ours.
	e.eventually(10*time.Second, "scheduler's ProfileInvalid on the broken pod", func() (bool, string) {
		p := e.get("p4-broken")
		c := podScheduled(p)
		return p.Spec.NodeName == "" && c != nil && c.Reason == ReasonProfileInvalid && strings.Contains(c.Message, "profile is not JSON"), fmt.Sprintf("%+v", c)
	})
	if p := e.get("plain"); p.Spec.NodeName != "" || podScheduled(p) != nil || len(e.events("plain", ReasonFailedScheduling)) > 0 {
		t.Errorf("pod of another scheduler touched: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	for name := range want {
		if ev := e.events(name, ReasonScheduled); len(ev) != 1 || !strings.Contains(ev[0], "Successfully assigned "+e.ns+"/"+name+" to "+want[name]) {
			t.Errorf("%s: Scheduled events %q", name, ev)
		}
	}

	// Node-0 has 1 GPU and no CPU left, node-1 1 GPU (and CPUs): image on
	// 2 GPUs cannot fit, at its ideal (6 CPUs per GPU) or at the fair
	// share (4).
	e.create(testPod("p6-big", "image", 2, 0, 0, 0))
	e.eventually(30*time.Second, "p6-big's FailedScheduling", func() (bool, string) {
		p := e.get("p6-big")
		c := podScheduled(p)
		ev := e.events("p6-big", ReasonFailedScheduling)
		want := "node " + n0 + ": Insufficient cpu (need 4, free 0)"
		ok := p.Spec.NodeName == "" && c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonUnschedulable &&
			strings.Contains(c.Message, want) && len(ev) > 0 && strings.Contains(ev[0], want)
		return ok, fmt.Sprintf("condition %+v events %q", c, ev)
	})
	time.Sleep(2500 * time.Millisecond) // a resync pass: still pending, nothing bound twice
	if p := e.get("p6-big"); p.Spec.NodeName != "" {
		t.Errorf("p6-big bound to %s", p.Spec.NodeName)
	}
	if st := s.Stats(); st.Binds != 4 || st.Conflicts != 0 {
		t.Errorf("stats %+v: want 4 binds, no conflicts", st)
	}
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestAPI_TwoReplicasNeverBindOnePodTwice runs two schedulers on one Lease:
// only the holder binds; when it stops, the other takes over; every pod is
// bound exactly once and no binding is ever refused as a double.
func TestAPI_TwoReplicasNeverBindOnePodTwice(t *testing.T) {
	e := newEnv(t)
	e.profiles()
	e.node("node-0", 8, 64, 512*gib)
	e.node("node-1", 8, 64, 512*gib)
	var mu sync.Mutex
	binds := map[string][]string{} // pod -> identities that bound it
	onBind := func(r BindRecord) {
		mu.Lock()
		defer mu.Unlock()
		binds[r.Pod] = append(binds[r.Pod], r.Identity)
	}
	a, stopA := e.scheduler("replica-a", "synergy-lease", onBind)
	b, stopB := e.scheduler("replica-b", "synergy-lease", onBind)
	e.eventually(15*time.Second, "one replica leads", func() (bool, string) {
		la, lb := a.Stats().Leading, b.Stats().Leading
		return la != lb, fmt.Sprintf("a %v b %v", la, lb)
	})
	leader, follower, stopLeader := a, b, stopA
	if b.Stats().Leading {
		leader, follower, stopLeader = b, a, stopB
	}
	if a.Stats().Leading && b.Stats().Leading {
		t.Fatal("both replicas lead")
	}
	created := func(prefix string, n int) []string {
		var names []string
		for i := range n {
			p := e.create(testPod(fmt.Sprintf("%s-%d", prefix, i), "language", 1, 1, 16*gib, 0))
			names = append(names, p.Name)
		}
		return names
	}
	allBound := func(names []string) func() (bool, string) {
		return func() (bool, string) {
			pending := 0
			for _, n := range names {
				if e.get(n).Spec.NodeName == "" {
					pending++
				}
			}
			return pending == 0, fmt.Sprintf("%d of %d pending", pending, len(names))
		}
	}
	first := created("first", 6)
	e.eventually(30*time.Second, "first pods bound", allBound(first))
	if follower.Stats().Binds != 0 {
		t.Errorf("the follower bound %d pods", follower.Stats().Binds)
	}
	// The leader goes away (releasing the Lease); the other takes over.
	stopLeader()
	e.eventually(15*time.Second, "follower leads", func() (bool, string) { return follower.Stats().Leading, "" })
	second := created("second", 6)
	e.eventually(30*time.Second, "second pods bound", allBound(second))

	mu.Lock()
	defer mu.Unlock()
	for _, n := range append(first, second...) {
		if len(binds[n]) != 1 {
			t.Errorf("pod %s bound %d times, by %v", n, len(binds[n]), binds[n])
		}
		if ev := e.events(n, ReasonScheduled); len(ev) != 1 {
			t.Errorf("pod %s: %d Scheduled events", n, len(ev))
		}
	}
	for _, n := range second {
		if binds[n][0] != follower.cfg.Identity {
			t.Errorf("pod %s bound by %s after the leader stopped", n, binds[n][0])
		}
	}
	if ca, cb := leader.Stats().Conflicts, follower.Stats().Conflicts; ca+cb != 0 {
		t.Errorf("bindings refused as already bound: %d and %d", ca, cb)
	}
	lease, err := e.c.CoordinationV1().Leases(e.ns).Get(e.ctx, "synergy-lease", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != follower.cfg.Identity {
		t.Errorf("lease %+v, %v: want held by %s", lease, err, follower.cfg.Identity)
	}
}

// TestAPI_PodGroupBoundTogether: a gang of three 2-GPU pods binds only
// once all three exist, then all at once.
func TestAPI_PodGroupBoundTogether(t *testing.T) {
	e := newEnv(t)
	e.profiles()
	e.node("node-0", 4, 16, 128*gib)
	e.node("node-1", 4, 16, 128*gib)
	e.webhook()
	e.scheduler("replica-a", "", nil)
	member := func(i int) *corev1.Pod {
		p := testPod(fmt.Sprintf("worker-%d", i), "language", 2, 0, 0, 0)
		p.Annotations[AnnotationPodGroup] = "train"
		p.Annotations[AnnotationPodGroupSize] = "3"
		return p
	}
	m0 := e.create(member(0))
	// The webhook fits the whole 6-GPU job: 1 CPU and 16 GiB per GPU.
	if cpu, mem := requests(m0, 0); cpu != "2" || mem != "32Gi" {
		t.Errorf("member requests %s %s", cpu, mem)
	}
	e.create(member(1))
	e.eventually(10*time.Second, "incomplete group waits", func() (bool, string) {
		c := podScheduled(e.get("worker-0"))
		return c != nil && strings.Contains(c.Message, "2 of 3 pods pending"), fmt.Sprintf("%+v", c)
	})
	e.create(member(2))
	e.eventually(30*time.Second, "group bound", func() (bool, string) {
		var got []string
		for i := range 3 {
			got = append(got, e.get(fmt.Sprintf("worker-%d", i)).Spec.NodeName)
		}
		return got[0] != "" && got[1] != "" && got[2] != "", fmt.Sprint(got)
	})
}

// kubectlPath is the kubectl scripts/local-k8s.sh links next to its
// kubeconfig, or $SYNERGY_KUBECTL.
func kubectlPath() string {
	if p := os.Getenv("SYNERGY_KUBECTL"); p != "" {
		return p
	}
	return filepath.Join(filepath.Dir(kubeconfigPath()), "bin", "kubectl")
}

// TestAPI_DeployManifestsPassServerDryRun: deploy/ as a whole (kubectl
// apply -k) is accepted by the API server's validation and admission, and
// the MutatingWebhookConfiguration's policy is the one the tests register.
func TestAPI_DeployManifestsPassServerDryRun(t *testing.T) {
	c := apiServer(t)
	kubectl := kubectlPath()
	if _, err := os.Stat(kubectl); err != nil {
		testreq.Skip(t, "k8s", fmt.Sprintf("no kubectl at %s (scripts/local-k8s.sh start links it)", kubectl))
	}
	ctx := context.Background()
	// Namespaced objects need their namespace to exist for a server-side
	// dry run; create it for real if it is not there.
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "synergy-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfigPath(), "apply", "--dry-run=server", "-k", filepath.Join("..", "deploy"), "-o", "name")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k deploy: %v\n%s", err, out)
	}
	for _, want := range []string{
		"namespace/synergy-system", "serviceaccount/synergy-scheduler", "serviceaccount/synergy-webhook",
		"clusterrole.rbac.authorization.k8s.io/synergy-scheduler", "role.rbac.authorization.k8s.io/synergy-scheduler-lease",
		"configmap/synergy-profiles", "service/synergy-webhook", "deployment.apps/synergy-scheduler", "deployment.apps/synergy-webhook",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/synergy",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("kubectl did not apply %s:\n%s", want, out)
		}
	}
	// Nothing was created: it was a dry run.
	if _, err := c.AppsV1().Deployments("synergy-system").Get(ctx, "synergy-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run created the scheduler Deployment: %v", err)
	}
	// The deployed webhook policy is the one the tests run with.
	yaml, err := exec.Command(kubectl, "--kubeconfig", kubeconfigPath(), "create", "--dry-run=server", "-f", filepath.Join("..", "deploy", "kubernetes", "mutatingwebhook.yaml"), "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got admissionregistrationv1.MutatingWebhookConfiguration
	if err := json.Unmarshal(yaml, &got); err != nil {
		t.Fatal(err)
	}
	want := webhookConfiguration("synergy", got.Webhooks[0].ClientConfig, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "synergy-system"},
	}}})
	gw, ww := got.Webhooks[0], want.Webhooks[0]
	if err := samePolicy(gw, ww); err != nil {
		t.Error(err)
	}
}

func samePolicy(got, want admissionregistrationv1.MutatingWebhook) error {
	var diffs []string
	check := func(field string, g, w any) {
		if fmt.Sprint(g) != fmt.Sprint(w) {
			diffs = append(diffs, fmt.Sprintf("%s: deploy has %v, webhookConfiguration %v", field, g, w))
		}
	}
	check("name", got.Name, want.Name)
	check("failurePolicy", *got.FailurePolicy, *want.FailurePolicy)
	check("timeoutSeconds", *got.TimeoutSeconds, *want.TimeoutSeconds)
	check("sideEffects", *got.SideEffects, *want.SideEffects)
	check("reinvocationPolicy", *got.ReinvocationPolicy, *want.ReinvocationPolicy)
	check("matchConditions", got.MatchConditions, want.MatchConditions)
	check("namespaceSelector", got.NamespaceSelector.String(), want.NamespaceSelector.String())
	check("rules", fmt.Sprintf("%v %v %v %v %v", got.Rules[0].Operations, got.Rules[0].APIGroups, got.Rules[0].APIVersions, got.Rules[0].Resources, *got.Rules[0].Scope),
		fmt.Sprintf("%v %v %v %v %v", want.Rules[0].Operations, want.Rules[0].APIGroups, want.Rules[0].APIVersions, want.Rules[0].Resources, *want.Rules[0].Scope))
	check("admissionReviewVersions", got.AdmissionReviewVersions, want.AdmissionReviewVersions)
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "\n"))
	}
	return nil
}

// TestAPI_DeployRBACIsEnough applies deploy/kubernetes/rbac.yaml for real
// and runs the webhook and the scheduler as their service accounts
// (impersonated: there is no kubelet to run the Deployments), with the
// profiles ConfigMap and the Lease where the manifests put them: a
// profiled pod is mutated, bound, and both write their events. A missing
// rule shows as a pod left alone or an error here.
func TestAPI_DeployRBACIsEnough(t *testing.T) {
	e := newEnv(t)
	k := exec.Command(kubectlPath(), "--kubeconfig", kubeconfigPath(), "apply",
		"-f", filepath.Join("..", "deploy", "kubernetes", "namespace.yaml"), "-f", filepath.Join("..", "deploy", "kubernetes", "rbac.yaml"))
	if out, err := k.CombinedOutput(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "no such file") {
			testreq.Skip(t, "k8s", "no kubectl: "+err.Error())
		}
		t.Fatalf("kubectl apply rbac: %v\n%s", err, out)
	}
	const sys = "synergy-system"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "synergy-profiles", Namespace: sys}, Data: map[string]string{}}
	for _, c := range exampleCurves {
		cm.Data[c.name] = string(exampleJSON(t, c.name))
	}
	if _, err := e.c.CoreV1().ConfigMaps(sys).Create(e.ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = e.c.CoreV1().ConfigMaps(sys).Update(e.ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.CoordinationV1().Leases(sys).Delete(context.Background(), "synergy-scheduler", metav1.DeleteOptions{})
	})
	as := func(sa string) kubernetes.Interface {
		cfg, err := restConfig(kubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Impersonate.UserName = "system:serviceaccount:" + sys + ":" + sa
		cfg.Impersonate.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + sys, "system:authenticated"}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e.node("node-0", 4, 16, 128*gib)

	// The webhook as synergy-webhook.
	whClient := as("synergy-webhook")
	certs, err := NewServingCerts([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "tls.crt"), certs.Cert, 0o600)
	_ = os.WriteFile(filepath.Join(dir, "tls.key"), certs.Key, 0o600)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	addr := make(chan net.Addr, 1)
	whDone := make(chan error, 1)
	go func() {
		whDone <- (&WebhookServer{Client: whClient, Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
			NodeSelector: labels.SelectorFromSet(labels.Set{"synergy-test": e.id}), ConfigMapNamespace: sys, ConfigMapName: "synergy-profiles",
			Logger: testLogger(t, "webhook"), Ready: func(a net.Addr) { addr <- a }}).Run(ctx)
	}()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-whDone:
		t.Fatalf("webhook as synergy-webhook: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("webhook as synergy-webhook did not start (its informers need list/watch on nodes and the profiles ConfigMap)")
	}
	url := fmt.Sprintf("https://%s%s", a, WebhookPath)
	mwc := webhookConfiguration("synergy-"+e.id, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certs.CA},
		&metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}})
	if _, err := e.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(e.ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), mwc.Name, metav1.DeleteOptions{})
	})

	// The scheduler as synergy-scheduler, on the manifests' Lease.
	src, stopCM, err := WatchConfigMap(ctx, as("synergy-scheduler"), sys, "synergy-profiles")
	if err != nil {
		t.Fatal(err)
	}
	defer stopCM()
	tune, _ := scheduler.NewStrategy("tune")
	s, err := NewScheduler(as("synergy-scheduler"), SchedulerConfig{
		Namespace: e.ns, NodeSelector: labels.SelectorFromSet(labels.Set{"synergy-test": e.id}), Strategy: tune, Profiles: src,
		BatchWindow: 300 * time.Millisecond, Resync: 2 * time.Second, Identity: "rbac-" + e.id, Logger: testLogger(t, "scheduler"),
		LeaseNamespace: sys, LeaseName: "synergy-scheduler", LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	schedDone := make(chan error, 1)
	go func() { schedDone <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-schedDone; err != nil {
			t.Errorf("scheduler as synergy-scheduler: %v", err)
		}
		<-whDone
	}()

	var pod *corev1.Pod
	e.eventually(30*time.Second, "webhook (as its service account) mutates a pod", func() (bool, string) {
		p := testPod("rbac", "image", 1, 0, 0, 0)
		p.Namespace = e.ns
		out, err := e.c.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		_, ok := out.Annotations[AnnotationApplied]
		return ok, fmt.Sprint(out.Annotations)
	})
	pod = e.create(testPod("rbac", "image", 1, 0, 0, 0))
	if cpu, _ := requests(pod, 0); cpu != "6" {
		t.Errorf("requests cpu %s, want image's 6", cpu)
	}
	e.create(testPod("too-big", "image", 8, 0, 0, 0))
	e.eventually(30*time.Second, "bound and explained by the scheduler as its service account", func() (bool, string) {
		p, big := e.get("rbac"), e.get("too-big")
		c := podScheduled(big)
		ev := e.events("too-big", ReasonFailedScheduling)
		ok := p.Spec.NodeName != "" && c != nil && c.Reason == ReasonUnschedulable && len(ev) > 0 && len(e.events("rbac", ReasonScheduled)) == 1
		return ok, fmt.Sprintf("node %q condition %+v events %q", p.Spec.NodeName, c, ev)
	})
	lease, err := e.c.CoordinationV1().Leases(sys).Get(e.ctx, "synergy-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "rbac-"+e.id {
		t.Errorf("lease %+v: %v", lease, err)
	}
}
