package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// agentStatus writes a pod's status as the agent would: running with an
// IP, Ready or not.
func agentStatus(ctx context.Context, c kubernetes.Interface, ns, name, ip string, ready bool) error {
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = v1.PodRunning, ip, []v1.PodIP{{IP: ip}}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// endpointsState prints the service's Endpoints as "ready=[...] notReady=[...]
// ports=[...]" (one subset expected) and its slices' endpoints as
// "ip:ready/serving/terminating@zone".
func endpointsState(ctx context.Context, c kubernetes.Interface, ns string) (ep, slices string) {
	e, err := c.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{}) //nolint:staticcheck // the controller writes them
	switch {
	case apierrors.IsNotFound(err):
		ep = "none"
	case err != nil:
		ep = err.Error()
	default:
		var parts []string
		for _, ss := range e.Subsets {
			var ready, notReady, ports []string
			for _, a := range ss.Addresses {
				ready = append(ready, a.IP)
			}
			for _, a := range ss.NotReadyAddresses {
				notReady = append(notReady, a.IP)
			}
			for _, p := range ss.Ports {
				ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
			}
			parts = append(parts, fmt.Sprintf("ready=%v notReady=%v ports=%v", ready, notReady, ports))
		}
		ep = strings.Join(parts, "; ")
	}
	l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		return ep, err.Error()
	}
	var out []string
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			cd := e.Conditions
			out = append(out, fmt.Sprintf("%s:%t/%t/%t@%s", e.Addresses[0], *cd.Ready, *cd.Serving, *cd.Terminating, *e.Zone))
		}
	}
	return ep, strings.Join(out, " ")
}

func waitEndpointsState(t *testing.T, c kubernetes.Interface, ns, wantEP, wantSlices string) {
	t.Helper()
	eventually(t, "endpoints "+wantEP+", slices "+wantSlices, func(ctx context.Context) (bool, string, error) {
		ep, sl := endpointsState(ctx, c, ns)
		return ep == wantEP && sl == wantSlices, "endpoints " + ep + ", slices " + sl, nil
	})
}

// TestEndpointsAndSlices: on the real server, a service's Endpoints and
// EndpointSlices follow the status its pods' agent reports (readiness,
// deletion), and go with the service (the slices through the garbage
// collector).
func TestEndpointsAndSlices(t *testing.T) {
	c := startControlPlane(t)
	ctx := t.Context()
	ns := "endpoints"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyNode(t, c, "node-a")
	zone := []byte(`{"metadata":{"labels":{"topology.kubernetes.io/zone":"zone-1"}}}`)
	if _, err := c.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, zone, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
	}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}}, Spec: v1.PodSpec{
			NodeName:   "node-a",
			Containers: []v1.Container{{Name: "c", Image: "nginx", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
		}}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := agentStatus(ctx, c, ns, name, fmt.Sprintf("10.244.0.%d", i+10), name == "a"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"a", "b"} {
			_ = c.CoreV1().Pods(ns).Delete(context.Background(), name, *metav1.NewDeleteOptions(0))
		}
	})
	waitEndpointsState(t, c, ns, "ready=[10.244.0.10] notReady=[10.244.0.11] ports=[http:8080]",
		"10.244.0.10:true/true/false@zone-1 10.244.0.11:false/false/false@zone-1")

	if err := agentStatus(ctx, c, ns, "b", "10.244.0.11", true); err != nil {
		t.Fatal(err)
	}
	waitEndpointsState(t, c, ns, "ready=[10.244.0.10 10.244.0.11] notReady=[] ports=[http:8080]",
		"10.244.0.10:true/true/false@zone-1 10.244.0.11:true/true/false@zone-1")

	// A graceful deletion: the pod stays until its (absent) agent confirms.
	if err := c.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpointsState(t, c, ns, "ready=[10.244.0.11] notReady=[] ports=[http:8080]",
		"10.244.0.10:false/true/true@zone-1 10.244.0.11:true/true/false@zone-1")

	if err := c.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpointsState(t, c, ns, "none", "")
}
