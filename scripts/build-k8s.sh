#!/usr/bin/env bash
# Build kube-apiserver and kubectl of one pinned Kubernetes release from the
# Go module proxy, in a throwaway module outside the clone, and cache the
# binaries by version so a second run on the same machine does not rebuild.
#
#   scripts/build-k8s.sh            # build (or reuse) and print the bin dir
#   K8S_VERSION=v1.37.2 K8S_CACHE=/var/cache/synergy/k8s scripts/build-k8s.sh
#
# The release is K8S_VERSION, else the one of the client-go in go.mod
# (scripts/lib/k8s-version.sh): the API server the tests run is the line
# the code is built against.
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod
# replaces every staging module (k8s.io/api, apimachinery, client-go, ...)
# with ./staging/src/k8s.io/NAME, and requires them at v0.0.0. The throwaway
# module takes those replace lines from the release's own go.mod and points
# each at the published staging module of the same release (v0.37.2 for
# v1.37.2), so the set of modules is exactly the release's.
set -euo pipefail

# shellcheck source=lib/k8s-version.sh
. "$(dirname "$0")/lib/k8s-version.sh"
version="$(k8s_version)"
cache="${K8S_CACHE:-/var/cache/synergy/k8s}"
bin="$cache/$version"
export PATH=/usr/local/go/bin:$PATH

if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kubectl" ]; then
  echo "$bin"
  exit 0
fi

case "$version" in
  v1.*.*) ;;
  *) echo "build-k8s: K8S_VERSION=$version: want v1.MINOR.PATCH" >&2; exit 2 ;;
esac
staging="v0.${version#v1.}"   # v1.37.2 -> v0.37.2
minor="${version#v1.}"; minor="${minor%%.*}"

work="$(mktemp -d /tmp/synergy-k8s-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
start=$(date +%s)
log() { echo "build-k8s: $(( $(date +%s) - start ))s: $*" >&2; }

# Build under a module of our own; GOFLAGS from the caller (e.g. -mod=vendor)
# would not apply here.
export GOFLAGS=-buildvcs=false GOWORK=off CGO_ENABLED=0 GOTOOLCHAIN=local
go mod init synergy.local/k8s-build >/dev/null 2>&1

log "reading k8s.io/kubernetes@$version's go.mod from the module proxy"
gomod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
  echo "build-k8s: could not download k8s.io/kubernetes@$version's go.mod" >&2
  exit 1
fi
# Every "k8s.io/X => ./staging/src/k8s.io/X" becomes "k8s.io/X => k8s.io/X $staging".
mods="$(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*#\1#p' "$gomod")"
if [ -z "$mods" ]; then
  echo "build-k8s: no staging replace lines in $gomod" >&2
  exit 1
fi
args=()
for m in $mods; do args+=("-replace=$m=$m@$staging"); done
go mod edit "${args[@]}" -require="k8s.io/kubernetes@$version"
log "$(echo "$mods" | wc -l) staging modules pinned at $staging"

log "resolving modules"
if ! go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$version" "k8s.io/kubernetes/cmd/kubectl@$version" 2>get.log; then
  grep -v '^go: downloading' get.log >&2
  exit 1
fi
if ! grep -q "k8s.io/kubernetes $version\$" go.mod; then
  echo "build-k8s: go get moved k8s.io/kubernetes off $version:" >&2; grep "k8s.io/kubernetes " go.mod >&2; exit 1
fi

# The version kubectl and /version report (hack/lib/version.sh stamps these).
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
mkdir -p out
log "compiling kube-apiserver and kubectl (CGO_ENABLED=0, $(nproc) cores)"
nice -n 10 go build -trimpath -ldflags "$ldflags" -o out/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
out/kube-apiserver --version >&2

mkdir -p "$bin"
for b in kube-apiserver kubectl; do
  install -m 0755 "out/$b" "$bin/.$b.tmp"
  mv -f "$bin/.$b.tmp" "$bin/$b"   # atomic: a half-written binary is never cached
done
log "cached in $bin"
echo "$bin"
