# shellcheck shell=bash
# k8s_version: the Kubernetes release the test control plane runs, K8S_VERSION
# when set, else the release of the client-go that go.mod requires (client-go
# v0.N.P is Kubernetes v1.N.P), so the client and the server move together.
k8s_version() {
  if [ -n "${K8S_VERSION:-}" ]; then
    echo "$K8S_VERSION"
    return
  fi
  local mod v
  mod="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/go.mod"
  v="$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9][0-9]*\.[0-9][0-9]*\)$#v1.\1#p' "$mod")"
  if [ -z "$v" ]; then
    echo "k8s-version: no k8s.io/client-go v0.N.P line in $mod; set K8S_VERSION=v1.N.P" >&2
    return 1
  fi
  echo "$v"
}
