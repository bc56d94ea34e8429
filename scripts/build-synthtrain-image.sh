#!/usr/bin/env bash
# Build a FROM scratch Docker image holding the static synthtrain binary, for
# `synergy profile --runner=docker --docker-img TAG -- synthtrain ...`.
#   scripts/build-synthtrain-image.sh [--tag TAG] [--binary PATH]
#   TAG defaults to synergy-synthtrain:latest; PATH to bin/synthtrain, built
#   (static, CGO_ENABLED=0) when missing. Nothing is pulled.
set -euo pipefail

usage() { sed -n '2,6s/^# \{0,1\}//p' "$0" >&2; exit 2; }

tag=synergy-synthtrain:latest
bin=
while [[ $# -gt 0 ]]; do
	case $1 in
	--tag) [[ $# -ge 2 ]] || usage; tag=$2; shift 2 ;;
	--tag=*) tag=${1#--tag=}; shift ;;
	--binary) [[ $# -ge 2 ]] || usage; bin=$2; shift 2 ;;
	--binary=*) bin=${1#--binary=}; shift ;;
	-h | --help) usage ;;
	*) echo "build-synthtrain-image: unknown argument $1" >&2; usage ;;
	esac
done
[[ -n $tag ]] || { echo "build-synthtrain-image: --tag: empty" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z $bin ]]; then
	bin=$root/bin/synthtrain
	if [[ ! -x $bin ]]; then
		echo "building $bin (CGO_ENABLED=0)" >&2
		(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/synthtrain)
	fi
fi
if [[ ! -f $bin || ! -x $bin ]]; then
	echo "build-synthtrain-image: --binary: $bin is not an executable file" >&2
	exit 1
fi
# A scratch image has no libc or loader: the binary must be static.
if command -v file >/dev/null; then
	case $(file -L "$bin") in
	*"dynamically linked"*)
		echo "build-synthtrain-image: --binary: $bin is dynamically linked; a FROM scratch image needs a static binary (build it with CGO_ENABLED=0)" >&2
		exit 1
		;;
	esac
fi
command -v docker >/dev/null || { echo "build-synthtrain-image: the docker CLI is not installed" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build-synthtrain-image: cannot reach the Docker daemon (${DOCKER_HOST:-unix:///var/run/docker.sock}): is it running?" >&2; exit 1; }
# Without the buildx plugin, say so up front and use the classic builder.
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0
fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/synergy-image-XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/synthtrain"
chmod 0755 "$ctx/synthtrain"
cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY synthtrain /usr/local/bin/synthtrain
ENV PATH=/usr/local/bin
LABEL synergy.image=scratch
ENTRYPOINT ["/usr/local/bin/synthtrain"]
EOF
if ! out=$(docker build --quiet --tag "$tag" "$ctx" 2>&1); then
	echo "build-synthtrain-image: docker build $tag failed:" >&2
	echo "$out" >&2
	exit 1
fi
id=$(docker image inspect --format '{{.Id}}' "$tag")
echo "built $tag ($id) holding $bin at /usr/local/bin/synthtrain"
echo "profile it with: synergy profile --runner docker --docker-img $tag --data DIR ... -- synthtrain --preset image"
