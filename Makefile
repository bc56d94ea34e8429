# synergy: profile DL training jobs' CPU and memory sensitivity, schedule by it.
# `make demo` and `make test` work on a fresh machine with Go and root.

GO        ?= go
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# go-nvml's C bindings call NVML functions its header marks deprecated: gcc
# warns ~145 times while compiling that package (its own cgo files, which no
# directive of ours reaches). Go's default flags plus the one warning off;
# a CGO_CFLAGS of your own wins.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
DEMO      ?= demo
# The demo's job: the audio preset (fetch-bound when its data is not cached)
# over a dataset 4x its smallest memory limit, reads throttled to stand for
# remote storage.
DEMO_PRESET ?= audio
DEMO_BYTES  ?= 256MiB
DEMO_CPUS   ?= 0.5,1,2
DEMO_MEM    ?= 64MiB,128MiB,384MiB
DEMO_READ   ?= 40MB

.PHONY: all build demo demo-k8s demo-slurm demo-pytorch test test-short bench fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/synergy ./cmd/synergy
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/synthtrain ./cmd/synthtrain

# Build, make a small dataset, profile the bundled workload over 3 CPU counts
# x 3 memory limits (+ unlimited), print the matrix, then place it on a cluster.
demo: build
	@mkdir -p $(DEMO)
	@test -d $(DEMO)/data-$(DEMO_PRESET) || bin/synthtrain gen --dir $(DEMO)/data-$(DEMO_PRESET) --bytes $(DEMO_BYTES) --preset $(DEMO_PRESET) --seed 1
	@rm -rf $(DEMO)/profile.json $(DEMO)/profile.logs
	bin/synergy profile --strategy axes --cpus $(DEMO_CPUS) --mem-limits $(DEMO_MEM) --disk-read-bps $(DEMO_READ) \
		-b 16 --data $(DEMO)/data-$(DEMO_PRESET) --max-iterations 100 --point-timeout 60s \
		--out $(DEMO)/profile.json -- bin/synthtrain --preset $(DEMO_PRESET)
	bin/synergy schedule --cluster default $(DEMO)/profile.json

# Kubernetes: on the local control plane (scripts/local-k8s.sh: etcd and a
# kube-apiserver built from the module proxy on first use), three GPU nodes
# and three profiled pods; runs `synergy k8s webhook` and `synergy k8s
# scheduler` and prints each pod's requests and node (docs/kubernetes.md).
demo-k8s: build
	deploy/demo.sh

# Slurm: on the local cluster (scripts/local-slurm.sh: Debian's slurm-wlm,
# 4 nodes x 8 GPUs through gres), three profiled jobs submitted held, placed
# by `synergy slurm place`; prints squeue and scontrol show job -d for each,
# beside the GPU-proportional alternative (docs/slurm.md).
demo-slurm: build
	deploy/slurm-demo.sh

# PyTorch: the image reference job (JPEG decode + augmentation, GPU step
# emulated at a V100's ResNet-18 pace) over --cpus 1,2 and the default memory
# axis, fitted to the job's measured footprint;
# RUNNER=local|docker (docker builds synergy/pytorch first; docs/pytorch.md).
RUNNER ?= local
demo-pytorch: build
	DEMO=$(DEMO) scripts/demo-pytorch.sh $(RUNNER)

# The cgroup v2 VM's tests (scripts/local-vm.sh, docs/vm.md) run last and
# alone: where /dev/kvm cannot run the VM's kernel it is emulated, and their
# check that 2 cores give the image job at least 0.8 of the cores' ratio (1.6x at 2:1) the samples/s of 1
# needs the host's cores to itself.
VMTESTS := ^TestCgroupV2VM_
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 45m -skip '$(VMTESTS)' ./...
	$(GO) test -count=1 -timeout 20m -run '$(VMTESTS)' ./cmd/synergy

test-short:
	$(GO) test -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./... 

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseIteration -fuzztime 20s ./jobcontract
	$(GO) test -run '^$$' -fuzz FuzzControlChannel -fuzztime 20s ./jobcontract
	$(GO) test -run '^$$' -fuzz FuzzController -fuzztime 20s ./models/synthtrain
	$(GO) test -run '^$$' -fuzz '^FuzzProfileDecode$$' -fuzztime 20s ./sensitivity
	$(GO) test -run '^$$' -fuzz '^FuzzProfileFields$$' -fuzztime 20s ./sensitivity

clean:
	rm -rf bin $(DEMO)
