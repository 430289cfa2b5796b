package endpoint

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

var readySince = metav1.NewTime(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))

// testPod is a running pod of app=web on node-1 with the given IP (none
// when empty), readiness and container ports.
func testPod(name, ip string, ready bool, ports ...v1.ContainerPort) *v1.Pod {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "c", Ports: ports}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: status, LastTransitionTime: readySince}}},
	}
	if ip != "" {
		p.Status.PodIP, p.Status.PodIPs = ip, []v1.PodIP{{IP: ip}}
	}
	return p
}

func httpPort(n int32) v1.ContainerPort {
	return v1.ContainerPort{Name: "http", ContainerPort: n, Protocol: v1.ProtocolTCP}
}

// webService selects app=web on a named port and a numeric one.
func webService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid", Labels: map[string]string{"tier": "front"},
			CreationTimestamp: metav1.NewTime(readySince.Add(-time.Hour))},
		Spec: v1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10",
			Ports: []v1.ServicePort{
				{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("http")},
				{Name: "metrics", Port: 9090, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)},
			},
		},
	}
}

// summary prints Endpoints as "ports ready=[addresses] notReady=[...]"
// per subset; an address is ip(pod[,host=hostname]).
func summary(ep *v1.Endpoints) string {
	var parts []string
	addrs := func(list []v1.EndpointAddress) string {
		var out []string
		for _, a := range list {
			s := a.IP + "(" + a.TargetRef.Name
			if a.Hostname != "" {
				s += ",host=" + a.Hostname
			}
			out = append(out, s+")")
		}
		return strings.Join(out, " ")
	}
	for _, ss := range ep.Subsets {
		var ports []string
		for _, p := range ss.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
		}
		parts = append(parts, fmt.Sprintf("%s ready=[%s] notReady=[%s]", strings.Join(ports, ","), addrs(ss.Addresses), addrs(ss.NotReadyAddresses)))
	}
	return strings.Join(parts, "; ")
}

func start(t *testing.T, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := ctrltest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, 2) })
	return client
}

func waitEndpoints(t *testing.T, client *fake.Clientset, name, want string) *v1.Endpoints {
	t.Helper()
	var ep *v1.Endpoints
	ctrltest.Eventually(t, "endpoints "+want, func(ctx context.Context) (bool, string) {
		var err error
		ep, err = client.CoreV1().Endpoints("default").Get(ctx, name, metav1.GetOptions{}) //nolint:staticcheck
		if err != nil {
			return false, err.Error()
		}
		return summary(ep) == want, summary(ep)
	})
	return ep
}

// TestEndpoints: ready and unready pods, named and numeric target ports,
// pods without an IP or finished left out, hostnames for the subdomain;
// then readiness changes and a deletion.
func TestEndpoints(t *testing.T) {
	hosted := testPod("c", "10.0.0.3", true, httpPort(8081))
	hosted.Spec.Hostname, hosted.Spec.Subdomain = "c", "web"
	done := testPod("done", "10.0.0.9", true, httpPort(8080))
	done.Status.Phase = v1.PodSucceeded
	client := start(t, webService(),
		testPod("a", "10.0.0.1", true, httpPort(8080)),
		testPod("b", "10.0.0.2", false, httpPort(8080)),
		hosted, done,
		testPod("no-ip", "", true, httpPort(8080)),
		testPod("no-port", "10.0.0.4", true))
	ep := waitEndpoints(t, client, "web",
		"http:8080 ready=[10.0.0.1(a)] notReady=[10.0.0.2(b)]; "+
			"http:8081 ready=[10.0.0.3(c,host=c)] notReady=[]; "+
			"metrics:9090 ready=[10.0.0.1(a) 10.0.0.3(c,host=c) 10.0.0.4(no-port)] notReady=[10.0.0.2(b)]")
	a := ep.Subsets[0].Addresses[0]
	if a.NodeName == nil || *a.NodeName != "node-1" || a.TargetRef.Kind != "Pod" || a.TargetRef.Namespace != "default" || a.TargetRef.UID != "uid-a" {
		t.Errorf("address %+v: want nodeName node-1 and the pod as targetRef", a)
	}
	if ep.Labels["tier"] != "front" || len(ep.Labels) != 1 {
		t.Errorf("labels %v, want the service's", ep.Labels)
	}
	// A new service: its creation is the change that triggered the write.
	if got := ep.Annotations[v1.EndpointsLastChangeTriggerTime]; got != "2025-06-01T11:00:00Z" {
		t.Errorf("trigger time %q, want the service's creation", got)
	}

	// b turns ready: it moves to addresses.
	b, _ := client.CoreV1().Pods("default").Get(t.Context(), "b", metav1.GetOptions{})
	b.Status.Conditions[0].Status = v1.ConditionTrue
	b.Status.Conditions[0].LastTransitionTime = metav1.NewTime(readySince.Add(time.Minute))
	if _, err := client.CoreV1().Pods("default").UpdateStatus(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep = waitEndpoints(t, client, "web",
		"http:8080 ready=[10.0.0.1(a) 10.0.0.2(b)] notReady=[]; "+
			"http:8081 ready=[10.0.0.3(c,host=c)] notReady=[]; "+
			"metrics:9090 ready=[10.0.0.1(a) 10.0.0.2(b) 10.0.0.3(c,host=c) 10.0.0.4(no-port)] notReady=[]")
	if got := ep.Annotations[v1.EndpointsLastChangeTriggerTime]; got != "2025-06-01T12:01:00Z" {
		t.Errorf("trigger time %q, want b's Ready transition", got)
	}

	// a is being deleted: it leaves.
	a2, _ := client.CoreV1().Pods("default").Get(t.Context(), "a", metav1.GetOptions{})
	now := metav1.Now()
	a2.DeletionTimestamp = &now
	if _, err := client.CoreV1().Pods("default").Update(t.Context(), a2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, client, "web",
		"http:8080 ready=[10.0.0.2(b)] notReady=[]; "+
			"http:8081 ready=[10.0.0.3(c,host=c)] notReady=[]; "+
			"metrics:9090 ready=[10.0.0.2(b) 10.0.0.3(c,host=c) 10.0.0.4(no-port)] notReady=[]")

	// The service goes: so do its endpoints.
	if err := client.CoreV1().Services("default").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "endpoints deleted", func(ctx context.Context) (bool, string) {
		_, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{}) //nolint:staticcheck
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestPublishNotReadyAndHeadless: publishNotReadyAddresses lists every pod
// (terminating ones too) as ready; a headless service without ports lists
// bare addresses and carries the headless label.
func TestPublishNotReadyAndHeadless(t *testing.T) {
	svc := webService()
	svc.Spec.PublishNotReadyAddresses = true
	headless := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       v1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: v1.ClusterIPNone},
	}
	terminating := testPod("t", "10.0.0.5", true, httpPort(8080))
	terminating.DeletionTimestamp = &readySince
	client := start(t, svc, headless, testPod("b", "10.0.0.2", false, httpPort(8080)), terminating)
	waitEndpoints(t, client, "web", "http:8080,metrics:9090 ready=[10.0.0.2(b) 10.0.0.5(t)] notReady=[]")
	ep := waitEndpoints(t, client, "db", " ready=[] notReady=[10.0.0.2(b)]")
	if _, ok := ep.Labels[v1.IsHeadlessService]; !ok {
		t.Errorf("headless endpoints labels %v, want %s", ep.Labels, v1.IsHeadlessService)
	}
}

// TestLeftAlone: services without a selector keep the endpoints their
// users write; endpoints without a service are deleted at start, except
// leader-election records.
func TestLeftAlone(t *testing.T) {
	manual := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}}
	manualEP := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", ResourceVersion: "1"},
		Subsets: []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "192.168.1.10"}}, Ports: []v1.EndpointPort{{Name: "https", Port: 6443}}}}}
	orphan := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "default", ResourceVersion: "1"}}
	leader := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "kube-system", ResourceVersion: "1",
		Annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": "{}"}}}
	client := start(t, manual, manualEP, orphan, leader, testPod("a", "10.0.0.1", true))
	ctrltest.Eventually(t, "orphan deleted", func(ctx context.Context) (bool, string) {
		_, err := client.CoreV1().Endpoints("default").Get(ctx, "gone", metav1.GetOptions{}) //nolint:staticcheck
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	got, err := client.CoreV1().Endpoints("default").Get(t.Context(), "kubernetes", metav1.GetOptions{}) //nolint:staticcheck
	if err != nil || !reflect.DeepEqual(got.Subsets, manualEP.Subsets) {
		t.Errorf("the API server's endpoints changed: %v %+v", err, got)
	}
	if _, err := client.CoreV1().Endpoints("kube-system").Get(t.Context(), "lock", metav1.GetOptions{}); err != nil { //nolint:staticcheck
		t.Errorf("leader-election record: %v", err)
	}
}
