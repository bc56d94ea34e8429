#!/usr/bin/env bash
# A real Kubernetes control plane for tests and the demo: etcd (Debian's
# etcd-server) and kube-apiserver (built from the Go module proxy by
# scripts/build-k8s.sh, cached by version), on 127.0.0.1 only. No kubelet,
# no controller manager, no kube-scheduler: nodes are created through the
# API and pods are bound, not run.
#
#   scripts/local-k8s.sh start    # idempotent; prints `export KUBECONFIG=...`
#   scripts/local-k8s.sh status   # exit 0 and print KUBECONFIG when up, 3 when down
#   scripts/local-k8s.sh stop     # idempotent
#
#   eval "$(scripts/local-k8s.sh start)" && kubectl get nodes
#
# start brings up an empty API (etcd's data from an earlier run is
# discarded; it lives on tmpfs where there is one). State, certificates,
# logs and the admin kubeconfig are under $SYNERGY_K8S_DIR
# (/var/lib/synergy/k8s); kubectl is linked as $SYNERGY_K8S_DIR/bin/kubectl.
set -euo pipefail
# shellcheck source=lib/daemon.sh
. "$(dirname "$0")/lib/daemon.sh"

here="$(cd "$(dirname "$0")" && pwd)"
dir="${SYNERGY_K8S_DIR:-/var/lib/synergy/k8s}"
# shellcheck source=lib/k8s-version.sh
. "$(dirname "$0")/lib/k8s-version.sh"
version="$(k8s_version)"
export K8S_VERSION="$version" # the one build-k8s.sh builds
etcd_port="${SYNERGY_K8S_ETCD_PORT:-23790}"
api_port="${SYNERGY_K8S_API_PORT:-16443}"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  etcd_data="${SYNERGY_K8S_ETCD_DATA:-/dev/shm/synergy-k8s-etcd-$etcd_port}"
else
  etcd_data="${SYNERGY_K8S_ETCD_DATA:-$dir/etcd}"
fi
pki="$dir/pki"
kubeconfig="$dir/admin.kubeconfig"

log() { echo "local-k8s: $*" >&2; }

# detached CMD...: run CMD in its own session with no file descriptor but
# stdin/out/err, so that the daemons hold nothing of the caller's: a lock
# taken with `flock FILE scripts/local-k8s.sh start` ends with the script,
# not with the daemons.
detached() { # run in the background (&): the exec replaces that subshell
  for fd in /proc/$BASHPID/fd/*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  exec setsid "$@"
}
die() { echo "local-k8s: $*" >&2; exit 1; }

# pid_of NAME: the pid in NAME.pid when that process is alive and is ours
# (its command line names our state: etcd its data directory, the API
# server our state directory), else nothing.
pid_of() {
  local f="$dir/$1.pid" pid mark="$dir"
  [ "$1" = etcd ] && mark="$etcd_data"
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$mark"; then
    echo "$pid"
  fi
}

api_ready() {
  [ -f "$pki/admin.crt" ] || return 1
  curl -sf --max-time 3 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1
}

etcd_ready() { curl -sf --max-time 3 "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q '"health":"true"'; }

running() { [ -n "$(pid_of etcd)" ] && [ -n "$(pid_of kube-apiserver)" ] && api_ready; }

print_env() { echo "export KUBECONFIG=$kubeconfig"; }

# stop_one NAME: TERM, up to 10 s, then KILL (scripts/lib/daemon.sh).
stop_one() { stop_daemon "$1" "$(pid_of "$1")" "$dir/$1.pid"; }

need_etcd() {
  command -v etcd >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian's etcd-server"
    # No init system here; policy-rc.d (where present) keeps the package's
    # own service from starting.
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >&2
  fi
  command -v etcd >/dev/null || die "etcd not found: apt-get install etcd-server"
}

# certs: a CA, the API server's serving certificate, an admin client
# certificate (group system:masters) and the service-account key pair.
certs() {
  [ -f "$pki/admin.crt" ] && [ -f "$pki/sa.pub" ] && return 0
  command -v openssl >/dev/null || die "openssl not found"
  log "generating certificates in $pki"
  rm -rf "$pki" && mkdir -p "$pki" && chmod 700 "$pki"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  (
    cd "$pki"
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 3650 -subj /CN=synergy-local-k8s-ca 2>/dev/null
    openssl req "${ec[@]}" -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null
    openssl req "${ec[@]}" -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=synergy-admin" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 3650 -extfile admin.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext ca.srl
  )
}

write_kubeconfig() {
  cat >"$kubeconfig.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: synergy-local
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: synergy-admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: synergy-local
  context: {cluster: synergy-local, user: synergy-admin}
current-context: synergy-local
EOF
  mv -f "$kubeconfig.tmp" "$kubeconfig"
}

start() {
  mkdir -p "$dir"
  if running; then
    log "already running (API https://127.0.0.1:$api_port)"
    print_env
    return 0
  fi
  need_etcd
  local bin
  bin="$("$here/build-k8s.sh")"
  mkdir -p "$dir/bin"
  ln -sf "$bin/kube-apiserver" "$dir/bin/kube-apiserver"
  ln -sf "$bin/kubectl" "$dir/bin/kubectl"
  certs
  # Whatever half is left of an earlier run goes; the API starts empty.
  stop_one kube-apiserver
  stop_one etcd
  rm -rf "$etcd_data"
  mkdir -p "$etcd_data" && chmod 700 "$etcd_data"

  log "starting etcd $(etcd --version | sed -n 's/^etcd Version: //p') on 127.0.0.1:$etcd_port (data $etcd_data)"
  detached etcd --name synergy-local --data-dir "$etcd_data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
    --initial-cluster "synergy-local=http://127.0.0.1:$((etcd_port + 10))" --initial-cluster-state new \
    --logger zap --log-level warn \
    </dev/null >>"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  for _ in $(seq 100); do etcd_ready && break; sleep 0.2; done
  etcd_ready || { tail -20 "$dir/etcd.log" >&2; die "etcd did not become healthy in 20 s (log: $dir/etcd.log)"; }

  # Admission plugins that need a controller we do not run are off:
  # ServiceAccount (pods would wait for the "default" service account the
  # token controller creates), TaintNodesByCondition (it taints new nodes
  # not-ready until a kubelet reports), DefaultTolerationSeconds (adds
  # tolerations for those taints). The webhook plugins are on by default.
  log "starting kube-apiserver $version on https://127.0.0.1:$api_port"
  detached "$dir/bin/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition,DefaultTolerationSeconds \
    --endpoint-reconciler-type=none \
    --allow-privileged=false --profiling=false \
    --cert-dir="$dir/pki-generated" \
    --v=1 \
    </dev/null >>"$dir/kube-apiserver.log" 2>&1 &
  echo $! >"$dir/kube-apiserver.pid"
  write_kubeconfig
  for _ in $(seq 300); do
    api_ready && break
    [ -n "$(pid_of kube-apiserver)" ] || { tail -30 "$dir/kube-apiserver.log" >&2; die "kube-apiserver exited (log: $dir/kube-apiserver.log)"; }
    sleep 0.2
  done
  api_ready || { tail -30 "$dir/kube-apiserver.log" >&2; die "kube-apiserver not ready in 60 s (log: $dir/kube-apiserver.log)"; }
  log "ready: etcd pid $(pid_of etcd), kube-apiserver pid $(pid_of kube-apiserver); kubectl: $dir/bin/kubectl"
  print_env
}

stop() {
  stop_one kube-apiserver
  stop_one etcd
  rm -rf "$etcd_data"
}

status() {
  if running; then
    log "running: etcd pid $(pid_of etcd), kube-apiserver pid $(pid_of kube-apiserver), https://127.0.0.1:$api_port"
    print_env
    return 0
  fi
  log "not running (etcd pid: $(pid_of etcd); kube-apiserver pid: $(pid_of kube-apiserver))"
  return 3
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
