#!/usr/bin/env bash
# Install Debian's PyTorch stack for /usr/bin/python3 (idempotent): what the
# reference jobs in models/pytorch and their tests need.
#   scripts/install-torch.sh [--check]
#   --check: install nothing; exit 0 when everything imports, 1 otherwise.
# Packages: python3-torch, python3-torchvision, python3-torchaudio, python3-pil,
# python3-numpy (bookworm: torch 1.13.1, torchvision 0.14.1, torchaudio 0.13.1;
# about 1 GB, about 3 minutes on a fresh machine). Waits for the dpkg lock
# when another apt run holds it. The `python3` first on PATH may be a pyenv
# interpreter that does not see Debian's packages: use /usr/bin/python3 (or
# point SYNERGY_PYTHON at an interpreter that imports torch).
set -euo pipefail

usage() { sed -n '2,11s/^# \{0,1\}//p' "$0" >&2; exit 2; }

check=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--check) check=1; shift ;;
	-h | --help) usage ;;
	*) echo "install-torch: unknown argument $1" >&2; usage ;;
	esac
done

py=/usr/bin/python3
pkgs=(python3 python3-torch python3-torchvision python3-torchaudio python3-pil python3-numpy)
probe='import torch, torchvision, torchaudio, PIL, numpy; print("torch", torch.__version__, "torchvision", torchvision.__version__, "torchaudio", torchaudio.__version__)'

imports() { [[ -x $py ]] && "$py" -c "$probe" 2>/dev/null; }

if v=$(imports); then
	echo "install-torch: $py has $v"
	exit 0
fi
if ((check)); then
	echo "install-torch: $py cannot import torch, torchvision, torchaudio, PIL and numpy" >&2
	exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "install-torch: apt-get needs root; run as root or: sudo apt-get install ${pkgs[*]}" >&2
	exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
start=$(date +%s)
if ((${#missing[@]})); then
	echo "install-torch: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	lock=(-o DPkg::Lock::Timeout=900)
	apt-get "${lock[@]}" update -qq
	apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! v=$(imports); then
	echo "install-torch: installed ${pkgs[*]}, but $py still cannot import them:" >&2
	"$py" -c "$probe" >&2 || true
	exit 1
fi
echo "install-torch: $py has $v ($(($(date +%s) - start)) s)"
