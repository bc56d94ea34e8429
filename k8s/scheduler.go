package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/synergy-sched/synergy/scheduler"
)

// SchedulerConfig configures a Scheduler.
type SchedulerConfig struct {
	// SchedulerName is the spec.schedulerName of the pods it places.
	SchedulerName string
	// Namespace limits the pending pods it places ("" = all).
	Namespace string
	// NodeSelector picks the nodes of the cluster (nil = all nodes).
	NodeSelector labels.Selector
	Strategy     scheduler.Strategy
	Profiles     ProfileSource
	// Placer defaults to QueuePlacer.
	Placer Placer
	// BatchWindow is how long a pass waits after the first change it sees,
	// so that pods created together are placed as one queue, as
	// `synergy schedule` places its arguments.
	BatchWindow time.Duration
	// Resync re-runs a pass this often without any change (waiting pods
	// are retried).
	Resync time.Duration
	// Identity names this replica in the Lease and in events.
	Identity string
	// LeaseNamespace and LeaseName name the Lease of leader election; an
	// empty LeaseName runs without it (one replica only).
	LeaseNamespace, LeaseName string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings (defaults 15 s, 10 s, 2 s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
	// OnBind, when set, is called after each successful binding.
	OnBind func(BindRecord)
}

// Stats counts what a Scheduler did.
type Stats struct {
	Passes int64
	// Binds is the number of successful pods/binding calls; Conflicts
	// the number refused because the pod was already bound.
	Binds, Conflicts int64
	// Leading is whether this replica holds the lease now.
	Leading bool
}

// Scheduler places pending pods as described in the package doc.
type Scheduler struct {
	cfg      SchedulerConfig
	client   kubernetes.Interface
	recorder record.EventRecorder
	events   record.EventBroadcaster

	pods  corev1listers.PodLister
	nodes corev1listers.NodeLister

	kick chan struct{}

	mu      sync.Mutex
	assumed map[types.UID]string
	// said is the last message written per pod, so that an unchanged
	// reason is not written again every pass.
	said map[types.UID]string

	passes, binds, conflicts atomic.Int64
	leading                  atomic.Bool
}

// BindRecord is one binding a Scheduler made.
type BindRecord struct {
	Namespace, Pod, Node, Identity string
}

// NewScheduler makes a scheduler on client; Run starts it.
func NewScheduler(client kubernetes.Interface, cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.Strategy == nil {
		return nil, errors.New("scheduler: no strategy")
	}
	if cfg.Placer == nil {
		cfg.Placer = QueuePlacer{}
	}
	if cfg.NodeSelector == nil {
		cfg.NodeSelector = labels.Everything()
	}
	if cfg.Identity == "" {
		return nil, errors.New("scheduler: no identity")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 15 * time.Second
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = 10 * time.Second
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{cfg: cfg, client: client, kick: make(chan struct{}, 1), assumed: map[types.UID]string{}, said: map[types.UID]string{}}
	return s, nil
}

// Stats returns the counters.
func (s *Scheduler) Stats() Stats {
	return Stats{Passes: s.passes.Load(), Binds: s.binds.Load(), Conflicts: s.conflicts.Load(), Leading: s.leading.Load()}
}

// watch starts the pod and node informers of factory (every change pokes
// the scheduling loop) and waits until their caches have synced.
func (s *Scheduler) watch(ctx context.Context, factory informers.SharedInformerFactory) error {
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	s.pods, s.nodes = podInf.Lister(), nodeInf.Lister()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
	}
	if _, err := podInf.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if _, err := nodeInf.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("scheduler: cache of %v did not sync", typ)
		}
	}
	return nil
}

// Run watches pods and nodes and, while leading, places pending pods until
// ctx is done. It returns nil when ctx ends, or an error when leadership
// is lost (run again, or exit and let the Deployment restart the replica,
// as kube-scheduler does).
func (s *Scheduler) Run(ctx context.Context) error {
	s.events = record.NewBroadcaster()
	s.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	// Not bound to ctx: the Lease's "stopped leading" event is recorded after
	// ctx ends. Shutdown stops it when Run returns.
	defer s.events.Shutdown()
	s.recorder = s.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: s.cfg.SchedulerName, Host: s.cfg.Identity})

	factory := informers.NewSharedInformerFactory(s.client, 0)
	defer factory.Shutdown()
	if err := s.watch(ctx, factory); err != nil {
		return err
	}
	if s.cfg.LeaseName == "" {
		s.leading.Store(true)
		s.loop(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.cfg.LeaseNamespace, Name: s.cfg.LeaseName},
		Client:     s.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.cfg.Identity, EventRecorder: s.recorder},
	}
	// The loop runs in the elector's goroutine; Run waits for it so that
	// nothing binds or records after Run returns.
	var (
		loops    sync.WaitGroup
		loopsMu  sync.Mutex
		finished bool
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   s.cfg.LeaseDuration,
		RenewDeadline:   s.cfg.RenewDeadline,
		RetryPeriod:     s.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            s.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				loopsMu.Lock()
				if finished {
					loopsMu.Unlock()
					return
				}
				loops.Add(1)
				loopsMu.Unlock()
				defer loops.Done()
				s.cfg.Logger.Info("leading", "lease", s.cfg.LeaseNamespace+"/"+s.cfg.LeaseName, "identity", s.cfg.Identity)
				s.leading.Store(true)
				s.loop(lctx)
			},
			OnStoppedLeading: func() {
				s.leading.Store(false)
				s.cfg.Logger.Info("stopped leading", "identity", s.cfg.Identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("scheduler: leader election: %w", err)
	}
	elector.Run(ctx)
	loopsMu.Lock()
	finished = true
	loopsMu.Unlock()
	loops.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("scheduler %s: lost the lease %s/%s", s.cfg.Identity, s.cfg.LeaseNamespace, s.cfg.LeaseName)
}

func (s *Scheduler) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop runs passes: after a change (and BatchWindow more), and every
// Resync.
func (s *Scheduler) loop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Resync)
	defer tick.Stop()
	s.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-tick.C:
		}
		if s.cfg.BatchWindow > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.cfg.BatchWindow):
			}
			// Changes seen during the window are in this pass.
			select {
			case <-s.kick:
			default:
			}
		}
		if err := s.pass(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Error("scheduling pass", "err", err)
		}
	}
}

// snapshot reads the informers' caches.
func (s *Scheduler) snapshot() (Snapshot, error) {
	nodes, err := s.nodes.List(s.cfg.NodeSelector)
	if err != nil {
		return Snapshot{}, err
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return Snapshot{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Forget assumptions the cache has caught up with, and what was said
	// about pods that are gone or bound.
	live := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		live[p.UID] = p
	}
	for uid := range s.assumed {
		if p, ok := live[uid]; !ok || p.Spec.NodeName != "" {
			delete(s.assumed, uid)
		}
	}
	for uid := range s.said {
		if p, ok := live[uid]; !ok || p.Spec.NodeName != "" {
			delete(s.said, uid)
		}
	}
	assumed := make(map[types.UID]string, len(s.assumed))
	for k, v := range s.assumed {
		assumed[k] = v
	}
	return Snapshot{Nodes: nodes, Pods: pods, Assumed: assumed}, nil
}

// pass makes one scheduling pass and carries out its actions.
func (s *Scheduler) pass(ctx context.Context) error {
	s.passes.Add(1)
	snap, err := s.snapshot()
	if err != nil {
		return err
	}
	pass, err := PlanPass(snap, PassConfig{
		SchedulerName: s.cfg.SchedulerName, Namespace: s.cfg.Namespace, Strategy: s.cfg.Strategy,
		Profiles: s.cfg.Profiles, Placer: s.cfg.Placer, ClusterName: s.cfg.SchedulerName,
	})
	if err != nil {
		return err
	}
	for _, a := range pass.Actions {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if a.Bind() {
			s.bindAll(ctx, a)
			continue
		}
		for _, p := range a.Pods {
			s.wait(ctx, p, a.Reason, a.Message)
		}
	}
	return nil
}

// bindAll binds the action's pods, each to its node; a pod group's pods
// are bound one after another, and a failure leaves the rest for the next
// pass (which places the group's remaining pods together).
func (s *Scheduler) bindAll(ctx context.Context, a Action) {
	for i, p := range a.Pods {
		node := a.Nodes[i]
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}
		err := s.client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		switch {
		case err == nil:
			s.binds.Add(1)
			s.mu.Lock()
			s.assumed[p.UID] = node
			delete(s.said, p.UID)
			s.mu.Unlock()
			s.recorder.Eventf(p, corev1.EventTypeNormal, ReasonScheduled, "Successfully assigned %s/%s to %s (%s)", p.Namespace, p.Name, node, a.Message)
			s.cfg.Logger.Info("bound", "pod", p.Namespace+"/"+p.Name, "node", node, "how", a.Message)
			if s.cfg.OnBind != nil {
				s.cfg.OnBind(BindRecord{Namespace: p.Namespace, Pod: p.Name, Node: node, Identity: s.cfg.Identity})
			}
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Bound meanwhile (by whom is the API's record), or deleted.
			s.conflicts.Add(1)
			s.cfg.Logger.Warn("bind refused", "pod", p.Namespace+"/"+p.Name, "node", node, "err", err)
			return
		default:
			s.cfg.Logger.Error("bind", "pod", p.Namespace+"/"+p.Name, "node", node, "err", err)
			s.recorder.Eventf(p, corev1.EventTypeWarning, ReasonFailedScheduling, "binding to %s failed: %v", node, err)
			return
		}
	}
}

// wait records why p waits: an event and a PodScheduled=False condition,
// both only when the reason changed since the last pass.
func (s *Scheduler) wait(ctx context.Context, p *corev1.Pod, reason, msg string) {
	s.mu.Lock()
	same := s.said[p.UID] == reason+"\x00"+msg
	s.said[p.UID] = reason + "\x00" + msg
	s.mu.Unlock()
	if same && hasCondition(p, reason, msg) {
		return
	}
	evReason := ReasonFailedScheduling
	if reason == ReasonProfileInvalid {
		evReason = ReasonProfileInvalid
	}
	if !same {
		s.recorder.Event(p, corev1.EventTypeWarning, evReason, msg)
		s.cfg.Logger.Info("waiting", "pod", p.Namespace+"/"+p.Name, "reason", reason, "msg", msg)
	}
	if hasCondition(p, reason, msg) {
		return
	}
	patch := map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg,
		LastTransitionTime: metav1.Now(),
	}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return
	}
	if _, err := s.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		s.cfg.Logger.Error("set PodScheduled condition", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
}

func hasCondition(p *corev1.Pod, reason, msg string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message == msg
		}
	}
	return false
}
