package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
)

// The Kubernetes end-to-end test drives the built synergy binary and
// kubectl against the test API server of scripts/local-k8s.sh
// ($SYNERGY_KUBECONFIG, or the script's default kubeconfig; never
// $KUBECONFIG, since it creates nodes). This package does not import
// client-go: only package k8s does.
func k8sTestEnv(t *testing.T) (kubeconfig, kubectl string) {
	t.Helper()
	kubeconfig = os.Getenv("SYNERGY_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = "/var/lib/synergy/k8s/admin.kubeconfig"
	}
	kubectl = os.Getenv("SYNERGY_KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(filepath.Dir(kubeconfig), "bin", "kubectl")
	}
	for _, f := range []string{kubeconfig, kubectl} {
		if _, err := os.Stat(f); err != nil {
			testreq.Skip(t, "k8s", fmt.Sprintf("%v: start the test control plane with scripts/local-k8s.sh start", err))
		}
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz", "--request-timeout=5s").CombinedOutput(); err != nil {
		testreq.Skip(t, "k8s", fmt.Sprintf("API server not ready: %v: %s", err, out))
	}
	testreq.Exclusive(t, "k8s") // one test process at a time (package k8s's tests too)
	return kubeconfig, kubectl
}

type kubectlRunner struct {
	t                   *testing.T
	kubectl, kubeconfig string
}

func (k kubectlRunner) run(stdin string, args ...string) string {
	k.t.Helper()
	cmd := exec.Command(k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startDaemon runs the synergy binary with args until the test ends; it
// returns once a stderr line matches ready, with the submatches.
func startDaemon(t *testing.T, bin string, ready *regexp.Regexp, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			t.Log(args[1] + ": " + line)
			if m := ready.FindStringSubmatch(line); m != nil && !sent {
				found <- m
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		if !sent {
			close(found)
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	select {
	case m, ok := <-found:
		if !ok {
			t.Fatalf("synergy %s exited before it was ready", strings.Join(args, " "))
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatalf("synergy %s: not ready in 60 s", strings.Join(args, " "))
	}
	return nil
}

// podView is what the test reads of a pod.
type podView struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Resources struct {
				Requests map[string]string `json:"requests"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
}

// TestK8s_E2E_PlacesLikeSynergySchedule runs `synergy k8s webhook` and
// `synergy k8s scheduler` as processes against the API server, creates
// two GPU nodes and three profiled pods with kubectl, and checks that the
// pods get their profiles' requests and are bound to the nodes that
// `synergy schedule --json` picks for the cluster `synergy k8s cluster`
// reads and the same queue.
func TestK8s_E2E_PlacesLikeSynergySchedule(t *testing.T) {
	kubeconfig, kubectl := k8sTestEnv(t)
	b := buildBinaries(t)
	k := kubectlRunner{t: t, kubectl: kubectl, kubeconfig: kubeconfig}
	rb := make([]byte, 3)
	_, _ = rand.Read(rb)
	id := "e" + hex.EncodeToString(rb)
	ns := "synergy-" + id
	dir := t.TempDir()
	profiles := filepath.Join("..", "..", "deploy", "examples", "profiles")

	k.run("", "create", "namespace", ns)
	t.Cleanup(func() {
		cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", "--wait=false")
		_ = cmd.Run()
		_ = exec.Command(kubectl, "--kubeconfig", kubeconfig, "delete", "nodes", "-l", "synergy-test="+id, "--wait=false").Run()
		_ = exec.Command(kubectl, "--kubeconfig", kubeconfig, "delete", "mutatingwebhookconfiguration", "synergy-"+id, "--wait=false").Run()
		_ = exec.Command(kubectl, "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--wait=false").Run()
	})
	k.run("", "create", "configmap", "profiles", "-n", ns,
		"--from-file=image="+filepath.Join(profiles, "image.json"),
		"--from-file=audio="+filepath.Join(profiles, "audio.json"),
		"--from-file=language="+filepath.Join(profiles, "language.json"))
	for _, n := range []string{"gpu-2", "gpu-10"} { // gpu-2 comes first: numbers compare as numbers
		name := n + "-" + id
		k.run(fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {synergy-test: %s}}\n", name, id), "create", "-f", "-")
		status := `{"status":{"capacity":{"nvidia.com/gpu":"4","cpu":"16","memory":"128Gi"},"allocatable":{"nvidia.com/gpu":"4","cpu":"16","memory":"128Gi"}}}`
		k.run("", "patch", "node", name, "--subresource=status", "--type=merge", "-p", status)
	}

	// The webhook, on a port of its choosing, registered for ns only.
	caBundle, _, err := runBin(b.synergy, "k8s", "certs", "--hosts", "127.0.0.1", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	m := startDaemon(t, b.synergy, regexp.MustCompile(`webhook serving" addr=(127\.0\.0\.1:\d+)`),
		"k8s", "webhook", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0",
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key"),
		"--profiles-configmap", ns+"/profiles", "--node-selector", "synergy-test="+id)
	mwc := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: synergy-%s}
webhooks:
- name: pods.synergy-sched.github.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://%s/mutate", caBundle: %s}
  failurePolicy: Ignore
  timeoutSeconds: 5
  sideEffects: NoneOnDryRun
  matchConditions:
  - {name: has-synergy-profile, expression: "has(object.metadata.annotations) && 'synergy-sched.github.io/profile' in object.metadata.annotations"}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}
`, id, m[1], strings.TrimSpace(caBundle), ns)
	k.run(mwc, "create", "-f", "-")

	pod := func(name, profile string, gpus int) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations: {synergy-sched.github.io/profile: %s}
spec:
  schedulerName: synergy
  containers:
  - name: train
    image: train:latest
    resources: {limits: {nvidia.com/gpu: "%d"}}
`, name, ns, profile, gpus)
	}
	// The API server calls a new webhook within a moment: wait on dry runs.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := k.run(pod("probe", "language", 1), "create", "--dry-run=server", "-f", "-", "-o", "json")
		if strings.Contains(out, "synergy-sched.github.io/applied") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook not called within 30 s: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// What synergy schedule says for this cluster and queue, before any
	// pod is bound.
	clusterJSON, _, err := runBin(b.synergy, "k8s", "cluster", "--kubeconfig", kubeconfig, "--node-selector", "synergy-test="+id, "--used-out", filepath.Join(dir, "used.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(clusterJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := []struct {
		pod, profile string
		gpus         int
	}{{"c-image", "image", 2}, {"b-audio", "audio", 1}, {"a-language", "language", 2}}
	// Named against their order: the queue follows the webhook's admission
	// stamps, not names (creation times have whole seconds). In name order
	// language would go first, and image would end on the other node.
	args := []string{"schedule", "--json", "--cluster", filepath.Join(dir, "cluster.json"), "--used", filepath.Join(dir, "used.json")}
	for _, q := range queue {
		args = append(args, fmt.Sprintf("%s:gpus=%d", filepath.Join(profiles, q.profile+".json"), q.gpus))
	}
	schedOut, _, err := runBin(b.synergy, args...)
	if err != nil {
		t.Fatal(err)
	}
	var sched struct {
		Placements []struct {
			Job     int `json:"job"`
			Servers []struct {
				Server string `json:"server"`
			} `json:"servers"`
			CPUs     float64 `json:"cpus"`
			MemBytes float64 `json:"mem_bytes"`
		} `json:"placements"`
	}
	if err := json.Unmarshal([]byte(schedOut), &sched); err != nil {
		t.Fatalf("synergy schedule --json: %v\n%s", err, schedOut)
	}
	if len(sched.Placements) != 3 {
		t.Fatalf("synergy schedule placed %d of 3: %s", len(sched.Placements), schedOut)
	}

	var manifest strings.Builder
	for _, q := range queue {
		manifest.WriteString(pod(q.pod, q.profile, q.gpus) + "---\n")
	}
	k.run(manifest.String(), "create", "-f", "-")
	startDaemon(t, b.synergy, regexp.MustCompile(`msg=bound`),
		"k8s", "scheduler", "--kubeconfig", kubeconfig, "--namespace", ns, "--node-selector", "synergy-test="+id,
		"--profiles-configmap", ns+"/profiles", "--leader-elect=false", "--batch-window", "300ms")

	var pods struct {
		Items []podView `json:"items"`
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		if err := json.Unmarshal([]byte(k.run("", "get", "pods", "-n", ns, "-o", "json")), &pods); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		if n == len(queue) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods bound in 60 s", n, len(queue))
		}
		time.Sleep(200 * time.Millisecond)
	}
	byName := map[string]podView{}
	for _, p := range pods.Items {
		byName[p.Metadata.Name] = p
	}
	for i, q := range queue {
		p := byName[q.pod]
		pl := sched.Placements[i]
		if pl.Job != i || len(pl.Servers) != 1 {
			t.Fatalf("synergy schedule placement %d: %+v", i, pl)
		}
		if p.Spec.NodeName != pl.Servers[0].Server {
			t.Errorf("%s bound to %s; synergy schedule puts job %d on %s", q.pod, p.Spec.NodeName, i, pl.Servers[0].Server)
		}
		req := p.Spec.Containers[0].Resources.Requests
		if want := fmt.Sprint(pl.CPUs); req["cpu"] != want {
			t.Errorf("%s requests cpu %s; synergy schedule gives %s", q.pod, req["cpu"], want)
		}
		if want := fmt.Sprintf("%dGi", int64(pl.MemBytes)>>30); req["memory"] != want {
			t.Errorf("%s requests memory %s; synergy schedule gives %s", q.pod, req["memory"], want)
		}
		if p.Metadata.Annotations["synergy-sched.github.io/applied"] == "" {
			t.Errorf("%s has no applied annotation", q.pod)
		}
	}
	t.Logf("synergy schedule: %s", schedOut)
}

// runBin runs a program and returns its stdout and stderr.
func runBin(bin string, args ...string) (string, string, error) {
	cmd := exec.Command(bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), err
}
