package kubelettest

import (
	"net"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// Start is New for a test: a fake kubelet requiring the client
// certificates of a fresh PKI, closed when the test ends. The PKI's
// kubelet client certificate (KubeletClientCertPEM, KubeletClientKeyPEM)
// is what the API server under test should present.
func Start(t testing.TB, logs LogFunc) (*Server, *pki.PKI) {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), pki.Options{Hostname: "test", IPs: []net.IP{}})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := New(p.CertPool(), logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Close)
	return kubelet, p
}

// SetNodeStatus points the node's status at a kubelet listening at
// host:port: its InternalIP is host, after a Hostname that does not
// resolve (the address types are tried in order). No host leaves the
// node without addresses; port 0 without a kubelet port.
func SetNodeStatus(node *v1.Node, host string, port int32) {
	if host != "" {
		node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: "unresolvable.invalid"}, {Type: v1.NodeInternalIP, Address: host}}
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
}

// Pod is a pod named name with the containers (busybox), bound to node
// ("" leaves it unscheduled).
func Pod(name, node string, containers ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{NodeName: node}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c, Image: "busybox:1"})
	}
	return pod
}
