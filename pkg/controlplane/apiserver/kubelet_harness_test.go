package apiserver

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
)

// kubeletHarness is an API server with a kubelet client certificate, a
// fake kubelet that requires certificates of the same CA, and a node
// "n1" whose status points at the fake.
type kubeletHarness struct {
	api     *Server
	url     string
	config  *rest.Config
	client  *kubernetes.Clientset
	kubelet *kubelettest.Server
}

// newKubeletHarnessWith starts the harness on the shared etcd under its
// own prefix, with the API server's Config changed by mutate (nil: as
// is); logs nil serves kubelettest.DefaultLogs. The proxying itself is
// kubeletproxy's to test: this is for what the server does with the
// kubelets (metrics.k8s.io) and its routing to them.
func newKubeletHarnessWith(t *testing.T, logs kubelettest.LogFunc, mutate func(*Config)) *kubeletHarness {
	t.Helper()
	kubelet, p := kubelettest.Start(t, logs)
	cfg := Config{
		Etcd:    testSrv.cfg.Etcd,
		Prefix:  "/kubelet-test-" + string(uuid.NewUUID()),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Kubelet: kubeletproxy.ClientConfig{CertPEM: p.KubeletClientCertPEM, KeyPEM: p.KubeletClientKeyPEM},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	api, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = api.Run(ctx) }()
	select {
	case <-api.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("API server not ready")
	}
	front := httptest.NewServer(api.Handler())
	t.Cleanup(front.Close)
	h := &kubeletHarness{api: api, url: front.URL, config: &rest.Config{Host: front.URL}, kubelet: kubelet}
	h.client = kubernetes.NewForConfigOrDie(h.config)
	// its own prefix: a policy of its own
	if err := bootstrapPolicy(ctx, api, h.config); err != nil {
		t.Fatal(err)
	}
	h.addNode(t, "n1", kubelet.Host, kubelet.Port)
	return h
}

// addNode registers a node whose kubelet listens at host:port.
func (h *kubeletHarness) addNode(t *testing.T, name, host string, port int32) {
	t.Helper()
	node, err := h.client.CoreV1().Nodes().Create(ctxT(t), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubelettest.SetNodeStatus(node, host, port)
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(ctxT(t), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// addPod creates a pod with the containers, bound to node ("" leaves it
// unscheduled).
func (h *kubeletHarness) addPod(t *testing.T, ns, name, node string, containers ...string) {
	t.Helper()
	if _, err := h.client.CoreV1().Pods(ns).Create(ctxT(t), kubelettest.Pod(name, node, containers...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace for the test.
func (h *kubeletHarness) namespace(t *testing.T) string {
	t.Helper()
	ns, err := h.client.CoreV1().Namespaces().Create(ctxT(t), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubelet-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
