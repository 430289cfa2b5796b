# nodeagent build and development targets.
#   make setup                  install packages, build the pause binary and the image archives
#   make build                  build _output/bin/nodeagent
#   make containerd-test-start  start the "test" containerd instance (hack/containerd.sh)
#   make containerd-test-stop   stop it

GO ?= go
BIN := _output/bin

.PHONY: setup build containerd-test-start containerd-test-stop

setup:
	GO=$(GO) bash hack/setup.sh

build:
	$(GO) build -o $(BIN)/nodeagent ./cmd/nodeagent

containerd-test-start:
	bash hack/containerd.sh start test

containerd-test-stop:
	bash hack/containerd.sh stop test
