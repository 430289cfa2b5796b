package realcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/test/framework"
)

// nodeProxierBinding binds upstream's system:node-proxier ClusterRole
// (kube-proxy's: list and watch Services, EndpointSlices, Nodes) to the
// nodes: the agent's service proxy reads them with the node's credential,
// and a real API server's Node authorizer grants nodes Services reads
// (system:node's rules) but no EndpointSlices. A cluster admin creates it
// for agents run with --service-proxy.
const nodeProxierBinding = "nodeagent:node-proxier"

// TestServiceProxy: the agent's --service-proxy in place of kube-proxy,
// against the real API's Services and the EndpointSlices that
// kube-controller-manager's endpointslice controller writes: a ClusterIP
// Service in front of a pod answering on 8080 is reached through the
// agent's nftables rules from the host and from another pod.
func TestServiceProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodeUser, nodeGroups := "system:node:"+nodeName, []string{"system:nodes", "system:authenticated"}
	if allowed := nodeMay(ctx, t, nodeUser, nodeGroups, "discovery.k8s.io", "endpointslices"); allowed {
		t.Errorf("the node may list EndpointSlices without %s: upstream's Node authorizer changed", nodeProxierBinding)
	}
	if allowed := nodeMay(ctx, t, nodeUser, nodeGroups, "", "services"); !allowed {
		t.Errorf("the node may not list Services (system:node's rules through the Node authorizer)")
	}
	deleteOnCleanup(t, "clusterrolebinding/"+nodeProxierBinding, "pod/echo", "pod/client", "service/echo")
	if _, err := cl.admin.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding(nodeProxierBinding, "system:node-proxier", "system:nodes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if allowed := nodeMay(ctx, t, nodeUser, nodeGroups, "discovery.k8s.io", "endpointslices"); !allowed {
		t.Errorf("the node may not list EndpointSlices with %s", nodeProxierBinding)
	}

	server := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default", Labels: map[string]string{"app": "echo"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "httpd", Image: framework.BusyboxImage,
			Command: []string{"sh", "-c", "mkdir -p /www && echo hello-from-echo > /www/index.html && exec httpd -f -p 8080 -h /www"},
			Ports:   []v1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 1},
		}}},
	}
	client := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: framework.BusyboxImage,
			Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}}},
	}
	for _, p := range []*v1.Pod{server, client} {
		if _, err := cl.admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := cl.admin.CoreV1().Services("default").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kctl.Must(t, "wait", "--for=condition=Ready", "pod/echo", "pod/client", "--timeout=120s")
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"

	// The host: the proxy's output chain. A new connection each time: one
	// opened before the rules were written goes wherever the host routes
	// the address, and conntrack keeps it there.
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	framework.WaitFor(t, apiTimeout, "the Service's ClusterIP to answer from the host", func() (bool, error) {
		resp, err := hc.Get(url)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)) == "hello-from-echo", fmt.Errorf("%s: %q", resp.Status, b)
	})
	// Another pod: the proxy's prerouting chain. (busybox nc: the test
	// image's busybox wget dies of SIGSEGV, whatever the address.)
	framework.WaitFor(t, apiTimeout, "the Service's ClusterIP to answer from the client pod", func() (bool, error) {
		out, stderr, err := kctl.Run(t, "exec", "client", "--", "sh", "-c",
			`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 `+svc.Spec.ClusterIP+` 80`)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		return strings.Contains(out, "200 OK") && strings.Contains(out, "hello-from-echo"), fmt.Errorf("%q", out)
	})

	// The endpoint leaves the slice when the server pod goes: the
	// ClusterIP stops answering (the proxy rejects it, as kube-proxy does
	// for a Service without endpoints).
	kctl.Must(t, "delete", "pod", "echo", "--timeout=90s")
	framework.WaitFor(t, apiTimeout, "the ClusterIP to stop answering without endpoints", func() (bool, error) {
		resp, err := hc.Get(url)
		if err != nil {
			return true, nil
		}
		resp.Body.Close()
		return false, fmt.Errorf("still answers: %s", resp.Status)
	})
}

// nodeMay asks the real API's SubjectAccessReview whether the node's
// identity may list group/resource in every namespace.
func nodeMay(ctx context.Context, t *testing.T, user string, groups []string, group, resource string) bool {
	t.Helper()
	sar, err := cl.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Group: group, Resource: resource},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}
