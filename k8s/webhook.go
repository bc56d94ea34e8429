package k8s

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/synergy-sched/synergy/scheduler"
)

// WebhookPath is where the webhook serves AdmissionReviews.
const WebhookPath = "/mutate"

// Webhook is the mutating admission webhook (admission.k8s.io/v1) that
// sets a profiled pod's requests. It never refuses a pod: a pod it cannot
// apply its profile to is admitted as it came, with a warning to the
// client, the AnnotationError annotation and a ProfileInvalid event.
type Webhook struct {
	// Profiles holds the stored profiles (nil: zoo:MODEL only).
	Profiles ProfileSource
	// Cluster returns the cluster whose node shape demands are fitted to.
	Cluster func() (scheduler.Cluster, error)
	// Recorder, when set, records ProfileInvalid events.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Now is the clock of the admitted annotation (time.Now when nil).
	Now func() time.Time
}

func (w *Webhook) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// ServeHTTP implements http.Handler for AdmissionReview v1 POSTs.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(rw, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	resp := w.Admit(review.Request)
	review.Response = resp
	review.Request = nil
	out, err := json.Marshal(review)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
}

// Admit decides one admission request: always allowed; patched when the
// pod names a profile.
func (w *Webhook) Admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		resp.Warnings = []string{"synergy: could not read the pod: " + err.Error()}
		return resp
	}
	ref, ok := pod.Annotations[AnnotationProfile]
	if !ok {
		return resp
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	stamp := map[string]string{AnnotationAdmitted: w.now().UTC().Format(time.RFC3339Nano)}
	ops, applied, err := w.mutate(&pod, ref, stamp)
	log := w.logger().With("pod", pod.Namespace+"/"+podName(&pod), "profile", ref)
	if err != nil {
		msg := fmt.Sprintf("requests left as they were: %v", err)
		log.Warn("profile not applied", "err", err)
		resp.Warnings = []string{"synergy: " + msg}
		stamp[AnnotationError] = msg
		ops = annotationOps(&pod, stamp, nil)
		if w.Recorder != nil && (req.DryRun == nil || !*req.DryRun) && pod.Name != "" {
			w.Recorder.Event(&pod, corev1.EventTypeWarning, ReasonProfileInvalid, msg)
		}
	} else {
		mq := memQuantity(applied.MemBytes)
		log.Info("profile applied", "cpus", applied.CPUs, "memory", mq.String(), "speedup", applied.Speedup, "changes", len(applied.Changes))
		for _, warn := range applied.Warnings {
			resp.Warnings = append(resp.Warnings, "synergy: "+warn)
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	return resp
}

func (w *Webhook) mutate(pod *corev1.Pod, ref string, annotations map[string]string) ([]PatchOp, Applied, error) {
	c, err := w.Cluster()
	if err != nil {
		return nil, Applied{}, err
	}
	if len(c.Servers) == 0 {
		return nil, Applied{}, fmt.Errorf("no node with allocatable %s: no node shape to fit the profile to", ResourceGPU)
	}
	_, size, err := groupSize(pod)
	if err != nil {
		return nil, Applied{}, err
	}
	gpus := DemandOf(pod).GPUs
	shape := scheduler.ShapeOf(&c)
	job, err := JobFor(0, ref, w.Profiles, gpus*max(size, 1), shape)
	if err != nil {
		return nil, Applied{}, err
	}
	applied, ops, err := PatchFor(pod, ref, job, shape, annotations)
	return ops, applied, err
}

func (w *Webhook) logger() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

// WebhookServer runs a Webhook over TLS with what it needs from the API:
// the GPU nodes (for the node shape) and the profiles ConfigMap, through
// informers, and an event recorder.
type WebhookServer struct {
	Client kubernetes.Interface
	// Addr is the listen address ("127.0.0.1:9443", ":9443").
	Addr string
	// CertFile and KeyFile are the serving certificate; they are read
	// again when they change on disk (a renewed Secret).
	CertFile, KeyFile string
	// NodeSelector picks the cluster's nodes (nil = all).
	NodeSelector labels.Selector
	// ConfigMapNamespace/ConfigMapName name the profiles ConfigMap; empty
	// for none. Dir, when set, is used instead.
	ConfigMapNamespace, ConfigMapName string
	Dir                               string
	Logger                            *slog.Logger
	// Ready, when set, is called with the bound address once serving.
	Ready func(addr net.Addr)
}

// Run serves until ctx is done.
func (s *WebhookServer) Run(ctx context.Context) error {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sel := s.NodeSelector
	if sel == nil {
		sel = labels.Everything()
	}
	nodesF := informers.NewSharedInformerFactory(s.Client, 0)
	nodes := nodesF.Core().V1().Nodes()
	syncs := []cache.InformerSynced{nodes.Informer().HasSynced}
	var src ProfileSource
	switch {
	case s.Dir != "":
		src = DirSource{Dir: s.Dir}
	case s.ConfigMapName != "":
		cms, stop, err := WatchConfigMap(ctx, s.Client, s.ConfigMapNamespace, s.ConfigMapName)
		if err != nil {
			return err
		}
		defer stop()
		src = cms
	}
	nodesF.Start(ctx.Done())
	defer nodesF.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return errors.New("webhook: caches did not sync")
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.Client.CoreV1().Events("")})
	defer events.Shutdown()
	wh := &Webhook{
		Profiles: src,
		Cluster: func() (scheduler.Cluster, error) {
			list, err := nodes.Lister().List(sel)
			if err != nil {
				return scheduler.Cluster{}, err
			}
			c, _ := ClusterFromNodes("nodes", list)
			return c, nil
		},
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "synergy-webhook"}),
		Logger:   log,
	}
	certs := &certReloader{certFile: s.CertFile, keyFile: s.KeyFile}
	if _, err := certs.get(nil); err != nil {
		return fmt.Errorf("webhook: serving certificate: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, wh)
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok\n") })
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("webhook: listen: %w", err)
	}
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get},
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Info("webhook serving", "addr", ln.Addr().String(), "path", WebhookPath, "profiles", fmt.Sprint(src))
	if s.Ready != nil {
		s.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return fmt.Errorf("webhook: %w", err)
	}
}

// certReloader serves the certificate files, reading them again when
// their modification time changes.
type certReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	mod               time.Time
	cert              *tls.Certificate
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := os.Stat(c.certFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil
		}
		return nil, err
	}
	if c.cert != nil && st.ModTime().Equal(c.mod) {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil
		}
		return nil, err
	}
	c.cert, c.mod = &cert, st.ModTime()
	return c.cert, nil
}
