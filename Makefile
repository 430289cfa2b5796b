# nodeagent build and development targets.
#   make run                    set up this host (packages, containerd, pause image) and run the server and its agent
#   make test                   every test: vet, unit tests, end-to-end tests on a dedicated containerd
#   make bench                  pod start figures: the agent beside the raw CRI floor, RSS and CPU
#   make setup                  install packages, build the pause binary and the image archives
#   make build                  build _output/bin/nodeagent (also upstream kubectl: `nodeagent kubectl`)
#   make crictl                 build crictl into _output/bin (to look at pods the way users do)
#   make realcluster            build the upstream control plane (k8s.io/kubernetes, etcd) for test/realcluster into _output/realcluster/bin, once
#   make containerd2            build containerd 2 and runc (Go module proxy) for test/containerd2 into _output/containerd2/bin, once
#   make kubectl                link _output/bin/kubectl to nodeagent (run as kubectl, it is kubectl)
#   make containerd-test-start  start the "test" containerd instance (hack/containerd.sh)
#   make containerd-test-stop   stop it

GO ?= go
BIN := _output/bin
CRICTL_VERSION := v1.37.0

.PHONY: run test test-unit test-e2e bench lint setup build crictl kubectl realcluster containerd2 containerd-test-start containerd-test-stop

run: setup build crictl kubectl
	bash hack/run.sh

test: setup lint test-unit test-e2e

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test-unit:
	$(GO) test -race -count=1 ./pkg/... ./internal/... ./cmd/...

# One package at a time: the end-to-end tests share the test containerd.
# test/realcluster runs the upstream control plane and test/containerd2 runs
# test/e2e's set on containerd 2: both built first, outside the test timeout
# (cached in _output/realcluster and _output/containerd2, so only the first
# run builds).
test-e2e: realcluster containerd2
	$(GO) test -p 1 -count=1 -timeout 40m ./test/...

bench: setup
	$(GO) run ./test/bench

setup:
	GO=$(GO) bash hack/setup.sh

# The bundled kubectl's version, as release builds of kubectl stamp it
# (test/framework.KubectlVersion stamps the same into the tests' builds).
KUBECTL_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=v1.37.2 -X $(p).gitMajor=1 -X $(p).gitMinor=37)

build:
	$(GO) build -ldflags "$(KUBECTL_LDFLAGS)" -o $(BIN)/nodeagent ./cmd/nodeagent

# crictl stays a separate build: sigs.k8s.io/cri-tools has its command in package main (cmd/crictl), which Go cannot import.
crictl:
	@test -x $(BIN)/crictl || GOBIN=$(abspath $(BIN)) $(GO) install sigs.k8s.io/cri-tools/cmd/crictl@$(CRICTL_VERSION)

# The upstream control plane test/realcluster runs (hack/realcluster, a module of its own).
realcluster:
	GO=$(GO) bash hack/realcluster.sh build

# containerd 2 and runc for hack/containerd.sh's instance containerd2 (test/containerd2).
containerd2:
	GO=$(GO) bash hack/containerd2.sh build

kubectl: build
	ln -sfn nodeagent $(BIN)/kubectl

containerd-test-start:
	bash hack/containerd.sh start test

containerd-test-stop:
	bash hack/containerd.sh stop test
