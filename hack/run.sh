#!/usr/bin/env bash
# `make run`: starts containerd (the "main" instance, standard socket) if it
# does not answer, installs the example config and manifests if absent, and
# runs `nodeagent server` in the foreground: the bundled control plane and
# this host's agent joined to it. Ctrl-C stops both; pods keep running.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash hack/containerd.sh start main

install -d /etc/nodeagent /etc/nodeagent/manifests
# crictl's endpoint, so that it needs no flags (kept if the user has one).
[[ -f /etc/crictl.yaml ]] || printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' >/etc/crictl.yaml
[[ -f /etc/nodeagent/config.yaml ]] || install -m 0644 deploy/config.yaml /etc/nodeagent/config.yaml
if grep -q '^address: 127.0.0.1' /etc/nodeagent/config.yaml; then
	echo "warning: /etc/nodeagent/config.yaml has 'address: 127.0.0.1': the API server cannot reach this" >&2
	echo "         node's API (kubectl logs/exec/top fail); deploy/config.yaml now says 0.0.0.0" >&2
fi
if [[ -z "$(ls -A /etc/nodeagent/manifests)" ]]; then
	install -m 0644 examples/manifests/*.yaml /etc/nodeagent/manifests/
fi

cat <<TXT

nodeagent server is starting: etcd (embedded), the API server, the scheduler,
the controllers, and this host's node agent joined to it.
  API server     https://127.0.0.1:6443  (data, PKI and etcd in /var/lib/nodeagent)
  kubectl        $ROOT/_output/bin/nodeagent kubectl get nodes   (upstream kubectl; default kubeconfig
                 /var/lib/nodeagent/admin.kubeconfig; $ROOT/_output/bin/kubectl links to it)
                 nodeagent kubectl create deployment hello --image=localhost/nodeagent/busybox:1 -- httpd -f -p 8080
                 nodeagent kubectl get pods -o wide          (pod IPs from the node's pod CIDR, 10.244.0.0/24)
                 nodeagent kubectl expose deployment hello --port 80 --target-port 8080
                 curl http://<the service's CLUSTER-IP>/   (the agent's service proxy, nftables table ip nodeagent-proxy)
  agent config   /etc/nodeagent/config.yaml  (KubeletConfiguration)
  manifests      /etc/nodeagent/manifests    (static pods; they appear in the API as mirror pods)
  runtime        unix:///run/containerd/containerd.sock  (containerd log: /var/lib/nodeagent/containerd-main/containerd.log)
  pod logs       /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
  crictl         $ROOT/_output/bin/crictl pods; $ROOT/_output/bin/crictl ps -a
Stop with Ctrl-C (pods keep running, as with the kubelet); stop containerd with
  bash hack/containerd.sh stop main

TXT
exec "$ROOT/_output/bin/nodeagent" server --data-dir /var/lib/nodeagent --agent-config /etc/nodeagent/config.yaml \
	--network-plugin=kubenet --cni-conf-dir /etc/nodeagent/cni/net.d --cni-bin-dir /usr/lib/cni --service-proxy
