#!/usr/bin/env bash
# `make demo-k8s`: on the local control plane (scripts/local-k8s.sh), create
# three GPU nodes and three profiled pods, run `synergy k8s webhook` and
# `synergy k8s scheduler`, and print each pod's requests and node, next to
# what `synergy schedule` says for the same cluster and queue.
# Everything it creates is removed at the end; a control plane it started
# is stopped again.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
synergy="${SYNERGY:-$root/bin/synergy}"
k8sdir="${SYNERGY_K8S_DIR:-/var/lib/synergy/k8s}"
profiles="$root/deploy/examples/profiles"
ns=synergy-demo
[ -x "$synergy" ] || { echo "demo-k8s: $synergy not built (make build)" >&2; exit 1; }

started=0
if ! "$root/scripts/local-k8s.sh" status >/dev/null 2>&1; then
  started=1
fi
eval "$("$root/scripts/local-k8s.sh" start)"
kubectl() { "$k8sdir/bin/kubectl" "$@"; }

work="$(mktemp -d /tmp/synergy-demo-k8s.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kubectl delete pods --all -n "$ns" --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l synergy-demo=true --wait=false >/dev/null 2>&1 || true
  kubectl delete mutatingwebhookconfiguration synergy-demo --wait=false >/dev/null 2>&1 || true
  kubectl delete configmap synergy-profiles -n "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
  if [ "$started" = 1 ]; then "$root/scripts/local-k8s.sh" stop; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "nodes: 3 × (4 nvidia.com/gpu, 16 CPUs, 128Gi), created through the API (no kubelet)"
for i in 0 1 2; do
  kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: gpu-node-$i, labels: {synergy-demo: "true"}}
EOF
  kubectl patch node "gpu-node-$i" --subresource=status --type=merge >/dev/null \
    -p '{"status":{"capacity":{"nvidia.com/gpu":"4","cpu":"16","memory":"128Gi"},"allocatable":{"nvidia.com/gpu":"4","cpu":"16","memory":"128Gi"}}}'
done
kubectl get nodes -l synergy-demo=true -o custom-columns='NODE:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu,CPU:.status.allocatable.cpu,MEMORY:.status.allocatable.memory'

step "profiles: ConfigMap $ns/synergy-profiles from deploy/examples/profiles"
kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
kubectl create configmap synergy-profiles -n "$ns" --from-file=image="$profiles/image.json" \
  --from-file=audio="$profiles/audio.json" --from-file=language="$profiles/language.json" >/dev/null

step "webhook: synergy k8s webhook on 127.0.0.1, registered for namespace $ns"
"$synergy" k8s certs --hosts 127.0.0.1 --out "$work" >"$work/cabundle" 2>/dev/null
"$synergy" k8s webhook --listen 127.0.0.1:0 --tls-cert-file "$work/tls.crt" --tls-key-file "$work/tls.key" \
  --profiles-configmap "$ns/synergy-profiles" --node-selector synergy-demo=true 2>"$work/webhook.log" &
pids+=($!)
addr=
for _ in $(seq 100); do
  addr="$(sed -n 's/.*webhook serving" addr=\([0-9.:]*\).*/\1/p' "$work/webhook.log")"
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$work/webhook.log" >&2; echo "demo-k8s: webhook did not start" >&2; exit 1; }
kubectl create -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: synergy-demo}
webhooks:
- name: pods.synergy-sched.github.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://$addr/mutate", caBundle: $(cat "$work/cabundle")}
  failurePolicy: Ignore
  timeoutSeconds: 5
  sideEffects: NoneOnDryRun
  matchConditions:
  - {name: has-synergy-profile, expression: "has(object.metadata.annotations) && 'synergy-sched.github.io/profile' in object.metadata.annotations"}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}
EOF
echo "serving on https://$addr/mutate"

pod() { # name profile gpus
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  annotations: {synergy-sched.github.io/profile: $2}
spec:
  schedulerName: synergy
  containers:
  - name: train
    image: train:latest
    resources: {limits: {nvidia.com/gpu: "$3"}}
---
EOF
}
# The API server starts calling a new webhook within a moment.
for _ in $(seq 100); do
  pod probe language 1 | kubectl create --dry-run=server -f - -o json 2>/dev/null | grep -q 'synergy-sched.github.io/applied' && break
  sleep 0.2
done

step "pods: three, asking only for GPUs and naming a profile"
{ pod train-image image 2; pod train-audio audio 1; pod train-language language 2; } | kubectl create -f -

step "scheduler: synergy k8s scheduler (strategy tune)"
"$synergy" k8s scheduler --leader-elect=false --namespace "$ns" --node-selector synergy-demo=true \
  --profiles-configmap "$ns/synergy-profiles" --batch-window 300ms 2>"$work/scheduler.log" &
pids+=($!)
for _ in $(seq 300); do
  [ "$(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" = 3 ] && break
  sleep 0.2
done
grep -E 'msg=(bound|waiting)' "$work/scheduler.log" | sed 's/^time=[^ ]* //' || true

step "result: requests set by the webhook, nodes chosen by the scheduler"
kubectl get pods -n "$ns" -o custom-columns='POD:.metadata.name,PROFILE:.metadata.annotations.synergy-sched\.github\.io/profile,GPUS:.spec.containers[0].resources.limits.nvidia\.com/gpu,CPU:.spec.containers[0].resources.requests.cpu,MEMORY:.spec.containers[0].resources.requests.memory,NODE:.spec.nodeName'

step "for comparison: synergy schedule, same cluster and queue"
"$synergy" k8s cluster --node-selector synergy-demo=true >"$work/cluster.json"
"$synergy" schedule --cluster "$work/cluster.json" "$profiles/image.json:gpus=2" "$profiles/audio.json" "$profiles/language.json:gpus=2"
