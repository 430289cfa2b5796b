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

# The control plane (API server on embedded etcd), in the background; it
# stops with this script.
install -d /var/lib/nodeagent
"$ROOT/_output/bin/nodeagent" server --data-dir /var/lib/nodeagent --disable-agent >/var/lib/nodeagent/server.log 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null' EXIT
for _ in $(seq 1 150); do
	curl -ksf https://127.0.0.1:6443/readyz >/dev/null 2>&1 && break
	kill -0 $server_pid 2>/dev/null || { echo "nodeagent server failed; see /var/lib/nodeagent/server.log" >&2; tail -20 /var/lib/nodeagent/server.log >&2; exit 1; }
	sleep 0.2
done

cat <<TXT

nodeagent is running: the control plane, and the node agent on static pods
(the agent joins the API server in a later version).
  API server     https://127.0.0.1:6443  (etcd embedded in /var/lib/nodeagent/etcd; log /var/lib/nodeagent/server.log)
  kubectl        export KUBECONFIG=/var/lib/nodeagent/admin.kubeconfig   ($ROOT/_output/bin/kubectl is upstream's)
                 kubectl get ns; kubectl create deployment web --image=localhost/nodeagent/busybox:1
  agent config   /etc/nodeagent/config.yaml  (KubeletConfiguration; flags override it)
  manifests      /etc/nodeagent/manifests    (add, edit or remove pod files: applied within a second)
  runtime        unix:///run/containerd/containerd.sock  (containerd log: /var/lib/nodeagent/containerd-main/containerd.log)
  pod logs       /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
  agent state    /var/lib/nodeagent

In another shell:
  curl -s http://127.0.0.1:10255/pods | head     # the agent's pods with their status (read-only API)
  curl -s http://127.0.0.1:10248/healthz
  $ROOT/_output/bin/crictl pods                  # sandboxes with NAME and NAMESPACE
  $ROOT/_output/bin/crictl ps -a
  curl -s http://127.0.0.1:18080/                # the example web pod's hostPort
Stop with Ctrl-C (pods keep running, as with the kubelet); stop containerd with
  bash hack/containerd.sh stop main

TXT
"$ROOT/_output/bin/nodeagent" agent --config /etc/nodeagent/config.yaml
