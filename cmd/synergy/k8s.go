package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/internal/atomicfile"
	"github.com/synergy-sched/synergy/k8s"
	"github.com/synergy-sched/synergy/scheduler"
)

// Flag names of `synergy k8s`.
const (
	k8sFlagKubeconfig   = "kubeconfig"
	k8sFlagListen       = "listen"
	k8sFlagCert         = "tls-cert-file"
	k8sFlagKey          = "tls-key-file"
	k8sFlagConfigMap    = "profiles-configmap"
	k8sFlagDir          = "profiles-dir"
	k8sFlagNodeSelector = "node-selector"
	k8sFlagSchedName    = "scheduler-name"
	k8sFlagStrategy     = "strategy"
	k8sFlagNamespace    = "namespace"
	k8sFlagBatch        = "batch-window"
	k8sFlagResync       = "resync"
	k8sFlagLeaderElect  = "leader-elect"
	k8sFlagLeaseNS      = "lease-namespace"
	k8sFlagLeaseName    = "lease-name"
	k8sFlagIdentity     = "identity"
	k8sFlagHosts        = "hosts"
	k8sFlagOut          = "out"
	k8sFlagValidity     = "validity"
	k8sFlagUsedOut      = "used-out"
)

func k8sCommand() *cli.Command {
	kubeconfig := &cli.StringFlag{Name: k8sFlagKubeconfig, Usage: "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account in a cluster)"}
	nodeSel := &cli.StringFlag{Name: k8sFlagNodeSelector, Usage: "label selector of the cluster's GPU nodes (default: every node with allocatable nvidia.com/gpu)"}
	cm := &cli.StringFlag{Name: k8sFlagConfigMap, Usage: "NAMESPACE/NAME of the ConfigMap whose keys are profile names and values profile JSON"}
	dir := &cli.StringFlag{Name: k8sFlagDir, Usage: "directory of profile JSON files (NAME.json), instead of a ConfigMap"}
	return &cli.Command{
		Name:  "k8s",
		Usage: "place training pods on Kubernetes by their profiles: an admission webhook and a scheduler",
		Description: "Pods name their profile in the annotation " + k8s.AnnotationProfile + ": a key of the profiles ConfigMap\n" +
			"(or a file in --profiles-dir), or zoo:MODEL. The webhook sets their CPU and memory requests from it; the\n" +
			"scheduler places pods with schedulerName: synergy as `synergy schedule` places a queue. See docs/kubernetes.md.",
		Commands: []*cli.Command{
			{
				Name:  "webhook",
				Usage: "serve the mutating admission webhook that sets profiled pods' CPU and memory requests",
				Description: "For a pod created with the " + k8s.AnnotationProfile + " annotation, sets CPU and memory requests and equal\n" +
					"limits on its GPU containers to the profile's ideal demand (the smallest allocation reaching 95% of its\n" +
					"best throughput) on the shape of the cluster's GPU nodes, and records what it changed in\n" +
					k8s.AnnotationApplied + ". A profile it cannot read leaves the pod as it came, with a warning, an\n" +
					k8s.AnnotationError + " annotation and a ProfileInvalid event: the webhook never refuses a pod.",
				Flags: []cli.Flag{
					kubeconfig, nodeSel, cm, dir,
					&cli.StringFlag{Name: k8sFlagListen, Value: ":9443", Usage: "HTTPS listen address; the webhook is at " + k8s.WebhookPath},
					&cli.StringFlag{Name: k8sFlagCert, Usage: "serving certificate (PEM), e.g. from `synergy k8s certs`; re-read when it changes"},
					&cli.StringFlag{Name: k8sFlagKey, Usage: "serving key (PEM)"},
				},
				Action: runK8sWebhook,
			},
			{
				Name:  "scheduler",
				Usage: "place pending pods with schedulerName: synergy on the GPU nodes, as `synergy schedule` places a queue",
				Description: "Watches pods and nodes; pending pods with the scheduler name are one FIFO queue (in the order the webhook\n" +
					"admitted them, else by creation time) offered to\n" +
					"the strategy on the nodes' free resources, and are bound through pods/binding. A pod that cannot be placed\n" +
					"gets a FailedScheduling event and a PodScheduled=False condition naming the short resource and node.\n" +
					"Pods annotated " + k8s.AnnotationPodGroup + " and " + k8s.AnnotationPodGroupSize + " are placed all or none.\n" +
					"With --leader-elect (default) replicas share a Lease and only the holder binds.",
				Flags: []cli.Flag{
					kubeconfig, nodeSel, cm, dir,
					&cli.StringFlag{Name: k8sFlagSchedName, Value: k8s.DefaultSchedulerName, Usage: "the spec.schedulerName of the pods to place"},
					&cli.StringFlag{Name: k8sFlagStrategy, Value: "tune", Usage: "allocation strategy: " + strings.Join(scheduler.StrategyNames(), ", ")},
					&cli.StringFlag{Name: k8sFlagNamespace, Usage: "place only pending pods of this namespace (default: all)"},
					&cli.DurationFlag{Name: k8sFlagBatch, Value: time.Second, Usage: "after a change, wait this long so that pods created together are placed as one queue"},
					&cli.DurationFlag{Name: k8sFlagResync, Value: 30 * time.Second, Usage: "retry waiting pods this often without any change"},
					&cli.BoolFlag{Name: k8sFlagLeaderElect, Value: true, Usage: "elect a leader among replicas on a Lease; only the leader binds (--leader-elect=false for a single replica)"},
					&cli.StringFlag{Name: k8sFlagLeaseNS, Value: envOr("POD_NAMESPACE", "synergy-system"), Usage: "namespace of the Lease ($POD_NAMESPACE when set)"},
					&cli.StringFlag{Name: k8sFlagLeaseName, Value: "synergy-scheduler", Usage: "name of the Lease"},
					&cli.StringFlag{Name: k8sFlagIdentity, Usage: "this replica's name in the Lease and events (default: hostname_RANDOM)"},
				},
				Action: runK8sScheduler,
			},
			{
				Name:  "certs",
				Usage: "make a CA and a serving certificate for the webhook",
				Description: "Writes ca.crt, tls.crt and tls.key to --out and prints the CA as the base64 caBundle of the\n" +
					"MutatingWebhookConfiguration. For the in-cluster Service: --hosts synergy-webhook.synergy-system.svc.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: k8sFlagHosts, Value: "synergy-webhook.synergy-system.svc", Usage: "comma-separated DNS names and IP addresses the certificate is for"},
					&cli.StringFlag{Name: k8sFlagOut, Value: ".", Usage: "directory to write ca.crt, tls.crt and tls.key to"},
					&cli.DurationFlag{Name: k8sFlagValidity, Value: 365 * 24 * time.Hour, Usage: "how long the certificates are valid"},
				},
				Action: runK8sCerts,
			},
			{
				Name:  "cluster",
				Usage: "print the cluster the scheduler sees, as `synergy schedule --cluster` reads it",
				Description: "Lists the nodes and pods once and prints the GPU nodes as a cluster JSON file (server order is the\n" +
					"scheduler's: node names, numbers compared as numbers); --used-out writes what bound pods hold in the form\n" +
					"`synergy schedule --used` reads. Then `synergy schedule --cluster FILE --used USED PROFILE:gpus=N ...`\n" +
					"shows where the scheduler would place those pods.",
				Flags: []cli.Flag{
					kubeconfig, nodeSel,
					&cli.StringFlag{Name: k8sFlagUsedOut, Usage: "write the resources bound pods hold here (JSON)"},
				},
				Action: runK8sCluster,
			},
		},
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func k8sLogger(c *cli.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.Root().ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func runK8sWebhook(ctx context.Context, c *cli.Command) error {
	if c.NArg() > 0 {
		return fmt.Errorf("k8s webhook: unexpected argument %q", c.Args().First())
	}
	for _, f := range []string{k8sFlagCert, k8sFlagKey} {
		if c.String(f) == "" {
			return fmt.Errorf("--%s: required (the API server calls webhooks over TLS only; see `synergy k8s certs`)", f)
		}
	}
	if c.String(k8sFlagConfigMap) != "" && c.String(k8sFlagDir) != "" {
		return fmt.Errorf("--%s and --%s: give one", k8sFlagConfigMap, k8sFlagDir)
	}
	if v := c.String(k8sFlagConfigMap); v != "" {
		if _, _, err := k8s.ParseConfigMapRef(v); err != nil {
			return fmt.Errorf("--%s: %w", k8sFlagConfigMap, err)
		}
	}
	if _, err := k8s.ParseNodeSelector(c.String(k8sFlagNodeSelector)); err != nil {
		return fmt.Errorf("--%s: %w", k8sFlagNodeSelector, err)
	}
	return k8s.RunWebhook(ctx, k8s.WebhookOptions{
		Kubeconfig: c.String(k8sFlagKubeconfig), Listen: c.String(k8sFlagListen),
		CertFile: c.String(k8sFlagCert), KeyFile: c.String(k8sFlagKey),
		ProfilesConfigMap: c.String(k8sFlagConfigMap), ProfilesDir: c.String(k8sFlagDir),
		NodeSelector: c.String(k8sFlagNodeSelector), Logger: k8sLogger(c),
	})
}

func runK8sScheduler(ctx context.Context, c *cli.Command) error {
	if c.NArg() > 0 {
		return fmt.Errorf("k8s scheduler: unexpected argument %q", c.Args().First())
	}
	if _, err := scheduler.NewStrategy(c.String(k8sFlagStrategy)); err != nil {
		return fmt.Errorf("--%s: %w", k8sFlagStrategy, err)
	}
	if c.String(k8sFlagConfigMap) != "" && c.String(k8sFlagDir) != "" {
		return fmt.Errorf("--%s and --%s: give one", k8sFlagConfigMap, k8sFlagDir)
	}
	if v := c.String(k8sFlagConfigMap); v != "" {
		if _, _, err := k8s.ParseConfigMapRef(v); err != nil {
			return fmt.Errorf("--%s: %w", k8sFlagConfigMap, err)
		}
	}
	if _, err := k8s.ParseNodeSelector(c.String(k8sFlagNodeSelector)); err != nil {
		return fmt.Errorf("--%s: %w", k8sFlagNodeSelector, err)
	}
	for _, f := range []string{k8sFlagBatch, k8sFlagResync} {
		if c.Duration(f) < 0 || (f == k8sFlagResync && c.Duration(f) == 0) {
			return fmt.Errorf("--%s = %v: need a positive duration", f, c.Duration(f))
		}
	}
	if c.Bool(k8sFlagLeaderElect) && (c.String(k8sFlagLeaseNS) == "" || c.String(k8sFlagLeaseName) == "") {
		return fmt.Errorf("--%s needs --%s and --%s", k8sFlagLeaderElect, k8sFlagLeaseNS, k8sFlagLeaseName)
	}
	return k8s.RunScheduler(ctx, k8s.SchedulerOptions{
		Kubeconfig: c.String(k8sFlagKubeconfig), SchedulerName: c.String(k8sFlagSchedName),
		Strategy: c.String(k8sFlagStrategy), Namespace: c.String(k8sFlagNamespace),
		NodeSelector:      c.String(k8sFlagNodeSelector),
		ProfilesConfigMap: c.String(k8sFlagConfigMap), ProfilesDir: c.String(k8sFlagDir),
		BatchWindow: c.Duration(k8sFlagBatch), Resync: c.Duration(k8sFlagResync),
		LeaderElect: c.Bool(k8sFlagLeaderElect), LeaseNamespace: c.String(k8sFlagLeaseNS), LeaseName: c.String(k8sFlagLeaseName),
		Identity: c.String(k8sFlagIdentity), Logger: k8sLogger(c),
	})
}

func runK8sCerts(_ context.Context, c *cli.Command) error {
	var hosts []string
	for _, h := range strings.Split(c.String(k8sFlagHosts), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return fmt.Errorf("--%s: no host names", k8sFlagHosts)
	}
	if c.Duration(k8sFlagValidity) <= 0 {
		return fmt.Errorf("--%s = %v: need a positive duration", k8sFlagValidity, c.Duration(k8sFlagValidity))
	}
	certs, err := k8s.NewServingCerts(hosts, c.Duration(k8sFlagValidity))
	if err != nil {
		return err
	}
	out := c.String(k8sFlagOut)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--%s: %w", k8sFlagOut, err)
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{"ca.crt", certs.CA, 0o644}, {"tls.crt", certs.Cert, 0o644}, {"tls.key", certs.Key, 0o600}} {
		if err := atomicfile.Write(filepath.Join(out, f.name), f.data, f.perm); err != nil {
			return fmt.Errorf("--%s: %w", k8sFlagOut, err)
		}
	}
	fmt.Fprintf(c.Root().ErrWriter, "wrote %s, %s and %s for %s\n", filepath.Join(out, "ca.crt"), filepath.Join(out, "tls.crt"), filepath.Join(out, "tls.key"), strings.Join(hosts, ", "))
	_, err = fmt.Fprintln(c.Root().Writer, base64.StdEncoding.EncodeToString(certs.CA))
	return err
}

// k8sClusterFile is the cluster JSON `synergy schedule --cluster` reads.
type k8sClusterFile struct {
	Name    string             `json:"name"`
	Servers []scheduler.Server `json:"servers"`
}

func runK8sCluster(ctx context.Context, c *cli.Command) error {
	if _, err := k8s.ParseNodeSelector(c.String(k8sFlagNodeSelector)); err != nil {
		return fmt.Errorf("--%s: %w", k8sFlagNodeSelector, err)
	}
	v, err := k8s.ReadCluster(ctx, c.String(k8sFlagKubeconfig), c.String(k8sFlagNodeSelector), "kubernetes")
	if err != nil {
		return err
	}
	for _, e := range v.Excluded {
		fmt.Fprintf(c.Root().ErrWriter, "left out node %s: %s\n", e.Node, e.Reason)
	}
	if len(v.Cluster.Servers) == 0 {
		return errors.New("no node with allocatable nvidia.com/gpu")
	}
	if path := c.String(k8sFlagUsedOut); path != "" {
		used := struct {
			Servers []scheduler.Usage `json:"servers"`
		}{Servers: v.Used}
		if used.Servers == nil {
			used.Servers = []scheduler.Usage{}
		}
		b, err := json.MarshalIndent(used, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--%s: %w", k8sFlagUsedOut, err)
		}
	}
	b, err := json.MarshalIndent(k8sClusterFile{Name: v.Cluster.Name, Servers: v.Cluster.Servers}, "", "  ")
	if err != nil {
		return err
	}
	_, err = c.Root().Writer.Write(append(b, '\n'))
	return err
}
