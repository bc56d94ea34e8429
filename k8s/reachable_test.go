package k8s

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A scheduler pointed at an API server it cannot reach says so and stops,
// instead of waiting for its caches in silence; one that answers is fine.
func TestReachable_SaysWhenTheAPIServerCannotBeReached(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major": "1", "minor": "37", "gitVersion": "v1.37.2"}`))
	}))
	defer up.Close()
	answers, _ := kubernetes.NewForConfig(&rest.Config{Host: up.URL})
	if err := Reachable(context.Background(), answers, 5*time.Second); err != nil {
		t.Errorf("a server that answers: %v", err)
	}
	refused, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Reachable(context.Background(), refused, 5*time.Second); err == nil || !strings.Contains(err.Error(), "cannot be reached") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("a refused connection: %v, want it named", err)
	}
	block := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer silent.Close()
	defer close(block)
	mute, _ := kubernetes.NewForConfig(&rest.Config{Host: silent.URL})
	start := time.Now()
	if err := Reachable(context.Background(), mute, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Errorf("a server that never answers: %v", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("waited %v for a silent server, want about the bound", waited)
	}
}

// RunScheduler against a kubeconfig whose server refuses connections
// returns that error instead of running for ever.
func TestRunScheduler_UnreachableAPIServerFails(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := RunScheduler(ctx, SchedulerOptions{Kubeconfig: kc, Strategy: "tune", SchedulerName: DefaultSchedulerName})
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") || ctx.Err() != nil {
		t.Errorf("RunScheduler: %v (ctx %v), want the unreachable server named at once", err, ctx.Err())
	}
}
