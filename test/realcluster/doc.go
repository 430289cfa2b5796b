// Package realcluster runs the agent under the upstream control plane:
// etcd (go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes pins),
// kube-apiserver, kube-controller-manager and kube-scheduler of
// k8s.io/kubernetes v1.37.2, built by hack/realcluster.sh and started on
// loopback with a PKI the suite generates and the flags kubeadm gives them.
// `nodeagent agent` joins with the kubelet's flags and files (--kubeconfig
// with a system:node client certificate, --config with a
// KubeletConfiguration) on the "test" containerd instance, and the tests
// drive it with the bundled kubectl as users do. Whatever the real API
// server refuses of the agent's requests is a finding of this suite.
//
// The package holds only tests; this file is its documentation.
package realcluster
