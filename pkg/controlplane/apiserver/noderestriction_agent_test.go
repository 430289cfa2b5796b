package apiserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/apiclient"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// nodeClient is a clientset authenticated as the node.
func nodeClient(t *testing.T, node string) kubernetes.Interface {
	t.Helper()
	u := nodeUser(node)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		testSrv.Handler().ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	}))
	t.Cleanup(srv.Close)
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
}

type readyRuntime struct{}

func (readyRuntime) Version(context.Context, string) (*criv1.VersionResponse, error) {
	return &criv1.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "v2.1.0", RuntimeApiVersion: "v1"}, nil
}

func (readyRuntime) Status(context.Context, bool) (*criv1.StatusResponse, error) {
	return &criv1.StatusResponse{Status: &criv1.RuntimeStatus{Conditions: []*criv1.RuntimeCondition{
		{Type: criv1.RuntimeReady, Status: true}, {Type: criv1.NetworkReady, Status: true},
	}}}, nil
}

// eventually waits for cond, which reads state the agent writes in the
// background.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentPassesNodeRestriction runs the agent's API components (node
// registration with a taint, node status, lease, mirror pods, pod status,
// final deletion) as a node credential: every write they make must pass
// the node authorizer and NodeRestriction.
func TestAgentPassesNodeRestriction(t *testing.T) {
	const node = "nr-agent"
	ns := testNamespace(t)
	c := nodeClient(t, node)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })

	ns1, err := apiclient.NewNodeStatus(apiclient.NodeConfig{Client: c, NodeName: node, Runtime: readyRuntime{}, Logger: quiet,
		Taints: []v1.Taint{{Key: "example.com/dedicated", Effect: v1.TaintEffectNoSchedule}}, UpdateFrequency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ns1.Run(ctx) }()
	select {
	case <-ns1.Registered():
	case <-time.After(15 * time.Second):
		t.Fatal("node not registered")
	}

	lease, err := apiclient.NewLease(apiclient.LeaseConfig{Client: c, NodeName: node, Duration: 4 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = lease.Run(ctx) }()
	eventually(t, "the lease owned by the node", func() bool {
		l, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1
	})

	mirrors, err := apiclient.NewMirrorManager(apiclient.MirrorConfig{Client: c, NodeName: node, Resync: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	static := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "static-" + node, Namespace: ns, UID: "static-uid",
			Annotations: map[string]string{podutil.ConfigSourceAnnotation: podutil.SourceFile, podutil.ConfigHashAnnotation: "h1"}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	mirrors.Update([]*v1.Pod{static}, nil)
	go func() { _ = mirrors.Run(ctx) }()
	eventually(t, "the mirror pod", func() bool {
		_, err := client.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return err == nil
	})

	status, err := apiclient.NewStatusManager(apiclient.StatusConfig{Client: c, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = status.Run(ctx) }()
	status.OnStatus(static, v1.PodStatus{Phase: v1.PodRunning})
	eventually(t, "the mirror pod's status", func() bool {
		p, err := client.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})

	// An API pod deleted by a user is removed for good by its node.
	boundPod(t, ns, "api-pod", node)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "api-pod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := client.CoreV1().Pods(ns).Get(ctx, "api-pod", metav1.GetOptions{})
	if err != nil || marked.DeletionTimestamp == nil {
		t.Fatalf("graceful deletion: %v %+v", err, marked)
	}
	marked.Annotations = map[string]string{podutil.ConfigSourceAnnotation: podutil.SourceAPI}
	status.OnStatus(marked, v1.PodStatus{Phase: v1.PodSucceeded})
	status.OnTerminated(marked)
	eventually(t, "the deleted pod gone", func() bool {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "api-pod", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// The node IPAM controller assigns the pod CIDR; the agent, restarted
	// with one more label, registers again (an update of its whole Node)
	// and reports its status: the pod CIDR it sends back is unchanged.
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType,
		[]byte(`{"spec":{"podCIDR":"10.244.77.0/24","podCIDRs":["10.244.77.0/24"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("assign the pod CIDR: %v", err)
	}
	ns2, err := apiclient.NewNodeStatus(apiclient.NodeConfig{Client: c, NodeName: node, Runtime: readyRuntime{}, Logger: quiet,
		Labels: map[string]string{"example.com/restarted": "1"}, UpdateFrequency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ns2.Run(ctx) }()
	select {
	case <-ns2.Registered():
	case <-time.After(15 * time.Second):
		t.Fatal("node with a pod CIDR not registered again")
	}

	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || len(n.Spec.Taints) != 1 || len(n.Status.Conditions) == 0 {
		t.Errorf("node: %v taints %v conditions %v", err, n.Spec.Taints, n.Status.Conditions)
	}
	if n.Labels["example.com/restarted"] != "1" || n.Spec.PodCIDR != "10.244.77.0/24" {
		t.Errorf("node after registering again: labels %v podCIDR %q", n.Labels, n.Spec.PodCIDR)
	}
}
