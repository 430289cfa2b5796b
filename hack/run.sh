#!/usr/bin/env bash
# `make run`: starts containerd (the "main" instance, standard socket) if it
# does not answer, installs the example config and manifests if absent, and
# runs the agent in the foreground. Ctrl-C stops the agent; pods keep running.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash hack/containerd.sh start main

install -d /etc/nodeagent /etc/nodeagent/manifests
# crictl's endpoint, so that it needs no flags (kept if the user has one).
[[ -f /etc/crictl.yaml ]] || printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' >/etc/crictl.yaml
[[ -f /etc/nodeagent/config.yaml ]] || install -m 0644 deploy/config.yaml /etc/nodeagent/config.yaml
if [[ -z "$(ls -A /etc/nodeagent/manifests)" ]]; then
	install -m 0644 examples/manifests/*.yaml /etc/nodeagent/manifests/
fi

cat <<TXT

nodeagent is starting (standalone: static pods, no API server yet).
  config         /etc/nodeagent/config.yaml  (KubeletConfiguration; flags override it)
  manifests      /etc/nodeagent/manifests    (add, edit or remove pod files: applied within a second)
  runtime        unix:///run/containerd/containerd.sock  (containerd log: /var/lib/nodeagent/containerd-main/containerd.log)
  pod logs       /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
  state          /var/lib/nodeagent

In another shell:
  curl -s http://127.0.0.1:10255/pods | head     # pods with their status (read-only API)
  curl -s http://127.0.0.1:10248/healthz
  $ROOT/_output/bin/crictl pods                  # sandboxes with NAME and NAMESPACE
  $ROOT/_output/bin/crictl ps -a
  curl -s http://127.0.0.1:18080/                # the example web pod's hostPort
Stop with Ctrl-C (pods keep running, as with the kubelet); stop containerd with
  bash hack/containerd.sh stop main

TXT
exec "$ROOT/_output/bin/nodeagent" agent --config /etc/nodeagent/config.yaml
