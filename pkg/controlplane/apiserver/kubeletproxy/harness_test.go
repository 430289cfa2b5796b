package kubeletproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// kubeletHarness is a Proxy with a kubelet client certificate in front
// of a fake kubelet that requires certificates of the same CA, served
// at the API's paths as the API server routes them to it, and a node
// "n1" whose status points at the fake. Pods and nodes are kept in
// memory; every create check is allowed (and recorded).
type kubeletHarness struct {
	url     string
	config  *rest.Config
	client  *kubernetes.Clientset
	kubelet *kubelettest.Server
	objects *objects
}

// newKubeletHarness starts the harness; logs nil serves
// kubelettest.DefaultLogs.
func newKubeletHarness(t *testing.T, logs kubelettest.LogFunc) *kubeletHarness {
	t.Helper()
	kubelet, p := kubelettest.Start(t, logs)
	client, err := NewClient(ClientConfig{CertPEM: p.KubeletClientCertPEM, KeyPEM: p.KubeletClientKeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	objs := &objects{pods: map[string]*v1.Pod{}, nodes: map[string]*v1.Node{}}
	proxy := &Proxy{Client: client, Pods: objs, Nodes: objs, Authorizer: objs}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, ok := request.ParseResourcePath(r.Method, r.URL.Path, false)
		if !ok || !IsConnect(ri.Group, ri.Resource, ri.Subresource) {
			responsewriters.WriteError(w, responsewriters.NotFoundPath(r.URL.Path))
			return
		}
		proxy.Serve(w, r, ri)
	}))
	t.Cleanup(front.Close)
	h := &kubeletHarness{url: front.URL, config: &rest.Config{Host: front.URL}, kubelet: kubelet, objects: objs}
	h.client = kubernetes.NewForConfigOrDie(h.config)
	h.addNode(t, "n1", kubelet.Host, kubelet.Port)
	return h
}

// addNode registers a node whose kubelet listens at host:port.
func (h *kubeletHarness) addNode(t *testing.T, name, host string, port int32) {
	t.Helper()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	kubelettest.SetNodeStatus(node, host, port)
	h.objects.mu.Lock()
	defer h.objects.mu.Unlock()
	h.objects.nodes[name] = node
}

// addPod adds a pod with the containers, bound to node ("" leaves it
// unscheduled).
func (h *kubeletHarness) addPod(t *testing.T, ns, name, node string, containers ...string) {
	t.Helper()
	pod := kubelettest.Pod(name, node, containers...)
	pod.Namespace = ns
	h.objects.mu.Lock()
	defer h.objects.mu.Unlock()
	h.objects.pods[ns+"/"+name] = pod
}

// namespace is a fresh namespace name for the test.
func (h *kubeletHarness) namespace(*testing.T) string { return "kubelet-" + string(uuid.NewUUID())[:8] }

// objects are the harness's pods and nodes, and the create checks made.
type objects struct {
	mu      sync.Mutex
	pods    map[string]*v1.Pod // namespace/name
	nodes   map[string]*v1.Node
	checked []request.Info
}

func (o *objects) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	return lookUp(o, o.pods, namespace+"/"+name, "pods", name)
}

func (o *objects) GetNode(_ context.Context, name string) (*v1.Node, error) {
	return lookUp(o, o.nodes, name, "nodes", name)
}

// lookUp copies m[key] out, or answers as storage does without it.
func lookUp[T interface{ DeepCopy() T }](o *objects, m map[string]T, key, resource, name string) (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if obj, ok := m[key]; ok {
		return obj.DeepCopy(), nil
	}
	var none T
	return none, apierrors.NewNotFound(v1.Resource(resource), name)
}

func (o *objects) Authorize(_ *http.Request, ri request.Info) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.checked = append(o.checked, ri)
	return nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
