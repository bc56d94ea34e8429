package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/synergy-sched/synergy/scheduler"
)

// NewClient connects to the API server of kubeconfig; with kubeconfig
// empty, of $KUBECONFIG, else ~/.kube/config, else the in-cluster service
// account (a pod of the Deployment).
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "synergy"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}

// reachTimeout bounds the first question to the API server.
const reachTimeout = 15 * time.Second

// Reachable asks the API server for its version, waiting at most timeout,
// so that a command pointed at a server it cannot reach says so and stops
// instead of waiting for its informers' caches for ever (their reflectors
// retry in silence).
func Reachable(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { _, err := client.Discovery().ServerVersion(); done <- err }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the Kubernetes API server cannot be reached: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("the Kubernetes API server did not answer within %v (is the kubeconfig's server reachable from here?)", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		if _, err := os.Stat(rules.GetDefaultFilename()); err != nil {
			cfg, err := rest.InClusterConfig()
			if err != nil {
				return nil, fmt.Errorf("in-cluster config: %w", err)
			}
			return cfg, nil
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// ParseNodeSelector reads a label selector ("nvidia.com/gpu.present=true");
// "" selects every node.
func ParseNodeSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("node selector %q: %w", s, err)
	}
	return sel, nil
}

// ParseConfigMapRef reads NAMESPACE/NAME.
func ParseConfigMapRef(s string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(s, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	return ns, n, nil
}

// WebhookOptions are `synergy k8s webhook`'s settings.
type WebhookOptions struct {
	Kubeconfig        string
	Listen            string
	CertFile, KeyFile string
	// ProfilesConfigMap is NAMESPACE/NAME; ProfilesDir a directory.
	ProfilesConfigMap, ProfilesDir string
	NodeSelector                   string
	Logger                         *slog.Logger
	Ready                          func(net.Addr)
}

// RunWebhook serves the webhook until ctx is done.
func RunWebhook(ctx context.Context, o WebhookOptions) error {
	if o.CertFile == "" || o.KeyFile == "" {
		return errors.New("a serving certificate and key are needed (the API server calls webhooks over TLS only)")
	}
	if o.ProfilesConfigMap != "" && o.ProfilesDir != "" {
		return errors.New("profiles from a ConfigMap or a directory, not both")
	}
	sel, err := ParseNodeSelector(o.NodeSelector)
	if err != nil {
		return err
	}
	client, err := NewClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	s := &WebhookServer{Client: client, Addr: o.Listen, CertFile: o.CertFile, KeyFile: o.KeyFile, NodeSelector: sel, Dir: o.ProfilesDir, Logger: o.Logger, Ready: o.Ready}
	if o.ProfilesConfigMap != "" {
		if s.ConfigMapNamespace, s.ConfigMapName, err = ParseConfigMapRef(o.ProfilesConfigMap); err != nil {
			return err
		}
	}
	return s.Run(ctx)
}

// SchedulerOptions are `synergy k8s scheduler`'s settings.
type SchedulerOptions struct {
	Kubeconfig    string
	SchedulerName string
	Strategy      string
	Namespace     string
	NodeSelector  string
	// ProfilesConfigMap is NAMESPACE/NAME; ProfilesDir a directory.
	ProfilesConfigMap, ProfilesDir string
	BatchWindow, Resync            time.Duration
	// LeaderElect turns on leader election on Lease
	// LeaseNamespace/LeaseName.
	LeaderElect               bool
	LeaseNamespace, LeaseName string
	Identity                  string
	Logger                    *slog.Logger
}

// DefaultIdentity is the hostname with a random suffix, as kube-scheduler
// names its replicas.
func DefaultIdentity() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "synergy"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return h + "_" + hex.EncodeToString(b)
}

// RunScheduler runs the scheduler until ctx is done or it loses the lease.
func RunScheduler(ctx context.Context, o SchedulerOptions) error {
	strategy, err := scheduler.NewStrategy(o.Strategy)
	if err != nil {
		return err
	}
	if o.ProfilesConfigMap != "" && o.ProfilesDir != "" {
		return errors.New("profiles from a ConfigMap or a directory, not both")
	}
	sel, err := ParseNodeSelector(o.NodeSelector)
	if err != nil {
		return err
	}
	client, err := NewClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	if err := Reachable(ctx, client, reachTimeout); err != nil {
		return err
	}
	cfg := SchedulerConfig{
		SchedulerName: o.SchedulerName, Namespace: o.Namespace, NodeSelector: sel, Strategy: strategy,
		BatchWindow: o.BatchWindow, Resync: o.Resync, Identity: o.Identity, Logger: o.Logger,
	}
	if cfg.Identity == "" {
		cfg.Identity = DefaultIdentity()
	}
	if o.LeaderElect {
		if o.LeaseNamespace == "" || o.LeaseName == "" {
			return errors.New("leader election needs a lease namespace and name")
		}
		cfg.LeaseNamespace, cfg.LeaseName = o.LeaseNamespace, o.LeaseName
	}
	var stop func()
	switch {
	case o.ProfilesDir != "":
		cfg.Profiles = DirSource{Dir: o.ProfilesDir}
	case o.ProfilesConfigMap != "":
		ns, name, err := ParseConfigMapRef(o.ProfilesConfigMap)
		if err != nil {
			return err
		}
		src, s, err := WatchConfigMap(ctx, client, ns, name)
		if err != nil {
			return err
		}
		cfg.Profiles, stop = src, s
		defer stop()
	}
	s, err := NewScheduler(client, cfg)
	if err != nil {
		return err
	}
	err = s.Run(ctx)
	st := s.Stats()
	s.cfg.Logger.Info("scheduler stopped", "passes", st.Passes, "binds", st.Binds, "conflicts", st.Conflicts)
	return err
}

// ClusterView is the cluster the scheduler sees now, in the form
// `synergy schedule --cluster FILE --used FILE` reads.
type ClusterView struct {
	Cluster  scheduler.Cluster
	Used     []scheduler.Usage
	Excluded []Excluded
}

// ReadCluster lists the nodes (matching nodeSelector) and all pods once.
func ReadCluster(ctx context.Context, kubeconfig, nodeSelector, name string) (ClusterView, error) {
	sel, err := ParseNodeSelector(nodeSelector)
	if err != nil {
		return ClusterView{}, err
	}
	client, err := NewClient(kubeconfig)
	if err != nil {
		return ClusterView{}, err
	}
	return readCluster(ctx, client, sel, name)
}

func readCluster(ctx context.Context, client kubernetes.Interface, sel labels.Selector, name string) (ClusterView, error) {
	nl, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return ClusterView{}, fmt.Errorf("list nodes: %w", err)
	}
	pl, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return ClusterView{}, fmt.Errorf("list pods: %w", err)
	}
	var v ClusterView
	nodes := make([]*corev1.Node, 0, len(nl.Items))
	for i := range nl.Items {
		nodes = append(nodes, &nl.Items[i])
	}
	v.Cluster, v.Excluded = ClusterFromNodes(name, nodes)
	pods := make([]*corev1.Pod, 0, len(pl.Items))
	for i := range pl.Items {
		pods = append(pods, &pl.Items[i])
	}
	v.Used = UsedOn(&v.Cluster, pods)
	return v, nil
}

// WatchConfigMap starts an informer on one ConfigMap and returns it as a
// ProfileSource once synced, with the function that stops the informer.
func WatchConfigMap(ctx context.Context, client kubernetes.Interface, namespace, name string) (*ConfigMapSource, func(), error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
	cms := f.Core().V1().ConfigMaps()
	src := &ConfigMapSource{Namespace: namespace, Name: name, Lister: cms.Lister()}
	inf := cms.Informer()
	stop := make(chan struct{})
	f.Start(stop)
	done := func() { close(stop); f.Shutdown() }
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		done()
		return nil, nil, fmt.Errorf("watch %s: cache did not sync", src)
	}
	return src, done, nil
}
