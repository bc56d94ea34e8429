#!/usr/bin/env bash
# Build synergy/pytorch:<tag>, a Debian bookworm image with PyTorch, for
# `synergy profile --runner docker`, without any registry:
#   scripts/build-pytorch-image.sh [--cache DIR] [--print-tag] [--force] [--quiet]
#   --cache DIR   where the rootfs tarball is kept between builds and clones
#                 (default $SYNERGY_CACHE or /var/cache/synergy)
#   --print-tag   print the tag the current sources give, build nothing
#   --force       rebuild the top layer even when the tag exists
# Layer 1, synergy/pytorch-base:<base-hash>: `mmdebstrap --variant=minbase`
# of bookworm with python3-torch, -torchvision, -torchaudio, -pil, -numpy (no
# Recommends, no docs or man pages but the copyright files), saved as
# DIR/pytorch-rootfs-<base-hash>.tar and `docker import`ed. Layer 2,
# synergy/pytorch:<hash>: FROM the base, models/pytorch's helper, reference
# jobs, generators, probe and test scripts in /opt/synergy. <base-hash> is a
# hash of the package list and the mmdebstrap options; <hash> adds the copied
# files, so a build is skipped when nothing changed. Prints the tag last.
set -euo pipefail

usage() { sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2; }

cache=${SYNERGY_CACHE:-/var/cache/synergy}
print_tag=0 force=0 quiet=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--cache) [[ $# -ge 2 ]] || usage; cache=$2; shift 2 ;;
	--cache=*) cache=${1#--cache=}; shift ;;
	--print-tag) print_tag=1; shift ;;
	--force) force=1; shift ;;
	--quiet) quiet=1; shift ;;
	-h | --help) usage ;;
	*) echo "build-pytorch-image: unknown argument $1" >&2; usage ;;
	esac
done
[[ -n $cache ]] || { echo "build-pytorch-image: --cache: empty" >&2; exit 2; }

say() { ((quiet)) || echo "build-pytorch-image: $*" >&2; }

root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/models/pytorch
suite=bookworm
packages=(python3 python3-torch python3-torchvision python3-torchaudio python3-pil python3-numpy)
mirrors=(
	"deb http://deb.debian.org/debian $suite main"
	"deb http://deb.debian.org/debian $suite-updates main"
	"deb http://deb.debian.org/debian-security $suite-security main"
)
debstrap_opts=(
	--variant=minbase
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
)
# What goes into /opt/synergy (paths relative to models/pytorch).
files=(synergy_metrics.py reference_loop.py gen_data.py train_imagenet.py train_lm.py train_speech.py
	probe/sitecustomize.py probe/synergy_probe.py
	testdata/imagenet_ref.py testdata/two_loaders.py testdata/no_loader.py)
dockerfile='FROM @BASE@
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
COPY opt/synergy /opt/synergy
WORKDIR /opt/synergy
LABEL org.synergy.packages="@PACKAGES@" org.synergy.source-hash="@HASH@"
CMD ["/usr/bin/python3", "/opt/synergy/train_imagenet.py", "--help"]'

sha() { sha256sum | cut -c1-12; }
base_hash=$(printf '%s\n' "$suite" "${packages[@]}" "${mirrors[@]}" "${debstrap_opts[@]}" | sha)
for f in "${files[@]}"; do
	[[ -f $src/$f ]] || { echo "build-pytorch-image: $src/$f is missing" >&2; exit 1; }
done
hash=$( {
	echo "$base_hash"
	echo "$dockerfile"
	for f in "${files[@]}"; do echo "$f"; sha256sum <"$src/$f"; done
} | sha)
base=synergy/pytorch-base:$base_hash
tag=synergy/pytorch:$hash
if ((print_tag)); then
	echo "$tag"
	exit 0
fi

command -v docker >/dev/null || { echo "build-pytorch-image: the docker CLI is not installed" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build-pytorch-image: cannot reach the Docker daemon (${DOCKER_HOST:-unix:///var/run/docker.sock}): is it running?" >&2; exit 1; }
have() { docker image inspect "$1" >/dev/null 2>&1; }

start=$(date +%s)
if have "$tag" && ((!force)); then
	say "$tag is up to date"
	echo "$tag"
	exit 0
fi

if ! have "$base"; then
	tarball=$cache/pytorch-rootfs-$base_hash.tar
	if [[ ! -s $tarball ]]; then
		if ! command -v mmdebstrap >/dev/null; then
			[[ $(id -u) -eq 0 ]] || { echo "build-pytorch-image: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }
			say "installing mmdebstrap"
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends mmdebstrap >&2 ||
				{ apt-get -o DPkg::Lock::Timeout=900 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends mmdebstrap >&2; }
		fi
		mkdir -p "$cache"
		say "mmdebstrap $suite with ${packages[*]} -> $tarball (several minutes)"
		part=$tarball.part.$$
		trap 'rm -f "$part"' EXIT
		include=$(IFS=,; echo "${packages[*]}")
		mmdebstrap "${debstrap_opts[@]}" --include="$include" --format=tar "$suite" "$part" "${mirrors[@]}" >&2
		mv "$part" "$tarball"
		trap - EXIT
		say "rootfs: $(du -m "$tarball" | cut -f1) MiB in $(($(date +%s) - start)) s"
	else
		say "using the cached rootfs $tarball"
	fi
	docker import --message "synergy: mmdebstrap $suite ${packages[*]}" "$tarball" "$base" >/dev/null
	say "imported $base"
fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/synergy-pytorch-image-XXXXXX")
trap 'rm -rf "$ctx"' EXIT
for f in "${files[@]}"; do
	mkdir -p "$ctx/opt/synergy/$(dirname "$f")"
	cp "$src/$f" "$ctx/opt/synergy/$f"
done
chmod -R a+rX "$ctx/opt"
d=${dockerfile//@BASE@/$base}
d=${d//@PACKAGES@/${packages[*]}}
echo "${d//@HASH@/$hash}" >"$ctx/Dockerfile"
# Without the buildx plugin, use the classic builder (it takes a local base).
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0
fi
# Quiet unless it fails (the classic builder warns that it is deprecated).
if ! out=$(docker build -q -t "$tag" "$ctx" 2>&1); then
	echo "$out" >&2
	echo "build-pytorch-image: docker build of $tag failed" >&2
	exit 1
fi
docker tag "$tag" synergy/pytorch:latest
size=$(docker image inspect -f '{{.Size}}' "$tag")
say "built $tag ($((size / 1048576)) MiB) in $(($(date +%s) - start)) s"
echo "$tag"
