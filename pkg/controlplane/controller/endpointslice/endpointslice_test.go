package endpointslice

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/garbagecollector"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

var readySince = metav1.NewTime(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))

func testPod(name, node, ip string, ready bool, ports ...v1.ContainerPort) *v1.Pod {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Ports: ports}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}}, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: status, LastTransitionTime: readySince}}},
	}
}

func httpPort(n int32) v1.ContainerPort {
	return v1.ContainerPort{Name: "http", ContainerPort: n, Protocol: v1.ProtocolTCP}
}

func node(name, zone string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if zone != "" {
		n.Labels = map[string]string{v1.LabelTopologyZone: zone}
	}
	return n
}

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

// sliceSummary prints a slice as "TYPE ports [pod=addr/RST ...]" with
// R(eady), S(erving), T(erminating) or "-", plus zone and hostname.
func sliceSummary(s *discovery.EndpointSlice) string {
	var ports, eps []string
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
	}
	flag := func(b *bool, c string) string {
		if b != nil && *b {
			return c
		}
		return "-"
	}
	for _, ep := range s.Endpoints {
		c := ep.Conditions
		e := fmt.Sprintf("%s=%s/%s%s%s", ep.TargetRef.Name, strings.Join(ep.Addresses, ","),
			flag(c.Ready, "R"), flag(c.Serving, "S"), flag(c.Terminating, "T"))
		if ep.Zone != nil {
			e += "@" + *ep.Zone
		}
		if ep.Hostname != nil {
			e += "#" + *ep.Hostname
		}
		eps = append(eps, e)
	}
	slices.Sort(eps)
	return fmt.Sprintf("%s %s [%s]", s.AddressType, strings.Join(ports, ","), strings.Join(eps, " "))
}

// start runs the controller on objs; tune (if not nil) adjusts it first.
func start(t *testing.T, tune func(*Controller), objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := ctrltest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	if tune != nil {
		tune(c)
	}
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, 2) })
	return client
}

func listSlices(ctx context.Context, client *fake.Clientset, svc string) []discovery.EndpointSlice {
	l, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + svc})
	if err != nil {
		return nil
	}
	return l.Items
}

// waitSlices waits until the service's slices print as want (sorted).
func waitSlices(t *testing.T, client *fake.Clientset, svc string, want ...string) []discovery.EndpointSlice {
	t.Helper()
	slices.Sort(want)
	var items []discovery.EndpointSlice
	ctrltest.Eventually(t, "slices of "+svc, func(ctx context.Context) (bool, string) {
		items = listSlices(ctx, client, svc)
		var got []string
		for i := range items {
			got = append(got, sliceSummary(&items[i]))
		}
		slices.Sort(got)
		return slices.Equal(got, want), strings.Join(got, "\n")
	})
	return items
}

func names(items []discovery.EndpointSlice) []string {
	var out []string
	for _, s := range items {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func updatePod(t *testing.T, client *fake.Clientset, name string, change func(*v1.Pod), status bool) {
	t.Helper()
	pods := client.CoreV1().Pods("default")
	p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(p)
	if status {
		_, err = pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
	} else {
		_, err = pods.Update(t.Context(), p, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestEndpointSlices: one slice per set of resolved ports, with
// conditions, zone, hostname, labels and owner; then readiness changes
// in place, a deletion turns terminating, a pod on an unknown node waits
// for it, and the service's deletion leaves the slices to the garbage
// collector.
func TestEndpointSlices(t *testing.T) {
	hosted := testPod("c", "node-1", "10.0.0.3", true, httpPort(8081))
	hosted.Spec.Hostname, hosted.Spec.Subdomain = "c", "web"
	client := start(t, nil, webService(), node("node-1", "zone-a"),
		testPod("a", "node-1", "10.0.0.1", true, httpPort(8080)),
		testPod("b", "node-1", "10.0.0.2", false, httpPort(8080)),
		hosted,
		testPod("no-ip", "node-1", "", true, httpPort(8080)))
	items := waitSlices(t, client, "web",
		"IPv4 http:8080,metrics:9090 [a=10.0.0.1/RS-@zone-a b=10.0.0.2/---@zone-a]",
		"IPv4 http:8081,metrics:9090 [c=10.0.0.3/RS-@zone-a#c]")
	for _, s := range items {
		ref := metav1.GetControllerOf(&s)
		if ref == nil || ref.UID != "svc-uid" || ref.Kind != "Service" || ref.APIVersion != "v1" || !*ref.BlockOwnerDeletion {
			t.Errorf("%s: controller %+v, want the service", s.Name, ref)
		}
		want := map[string]string{"tier": "front", discovery.LabelServiceName: "web", discovery.LabelManagedBy: ControllerName}
		if !maps.Equal(s.Labels, want) {
			t.Errorf("%s: labels %v, want %v", s.Name, s.Labels, want)
		}
		if s.GenerateName != "web-" || s.Annotations[v1.EndpointsLastChangeTriggerTime] != "2025-06-01T11:00:00Z" {
			t.Errorf("%s: generateName %q, annotations %v", s.Name, s.GenerateName, s.Annotations)
		}
		if ep := s.Endpoints[0]; *ep.NodeName != "node-1" || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
			t.Errorf("%s: endpoint %+v, want nodeName and the pod as targetRef", s.Name, ep)
		}
	}
	before := names(items)

	updatePod(t, client, "b", func(p *v1.Pod) { p.Status.Conditions[0].Status = v1.ConditionTrue }, true)
	now := metav1.Now()
	updatePod(t, client, "a", func(p *v1.Pod) { p.DeletionTimestamp = &now }, false)
	items = waitSlices(t, client, "web",
		"IPv4 http:8080,metrics:9090 [a=10.0.0.1/-ST@zone-a b=10.0.0.2/RS-@zone-a]",
		"IPv4 http:8081,metrics:9090 [c=10.0.0.3/RS-@zone-a#c]")
	if got := names(items); !slices.Equal(got, before) {
		t.Errorf("slices %v after in-place changes, want %v", got, before)
	}

	// A pod on a node not known yet joins once the node is.
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), testPod("d", "node-2", "10.0.0.4", true, httpPort(8080)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(t.Context(), node("node-2", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "web",
		"IPv4 http:8080,metrics:9090 [a=10.0.0.1/-ST@zone-a b=10.0.0.2/RS-@zone-a d=10.0.0.4/RS-]",
		"IPv4 http:8081,metrics:9090 [c=10.0.0.3/RS-@zone-a#c]")

	// The pods go: the slices empty into the placeholder.
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := client.CoreV1().Pods("default").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitSlices(t, client, "web", "IPv4  []")
}

// TestPlaceholderAndPublishNotReady: a service without endpoints has an
// empty slice, which the first endpoints reuse; with
// publishNotReadyAddresses every pod is ready.
func TestPlaceholderAndPublishNotReady(t *testing.T) {
	svc := webService()
	svc.Spec.PublishNotReadyAddresses = true
	client := start(t, nil, svc, node("node-1", ""))
	placeholder := waitSlices(t, client, "web", "IPv4  []")
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), testPod("b", "node-1", "10.0.0.2", false, httpPort(8080)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	items := waitSlices(t, client, "web", "IPv4 http:8080,metrics:9090 [b=10.0.0.2/R--]")
	if items[0].Name != placeholder[0].Name {
		t.Errorf("slice %s, want the placeholder %s reused", items[0].Name, placeholder[0].Name)
	}
}

// TestMaxEndpointsPerSlice: slices fill up to the limit; removing pods
// rewrites the slices that held them and creates none.
func TestMaxEndpointsPerSlice(t *testing.T) {
	objs := []runtime.Object{webService(), node("node-1", "")}
	for i := range 25 {
		objs = append(objs, testPod(fmt.Sprintf("p%02d", i), "node-1", fmt.Sprintf("10.0.1.%d", i+1), true, httpPort(8080)))
	}
	client := start(t, func(c *Controller) { c.maxPerSlice = 10 }, objs...)
	sizes := func(ctx context.Context) ([]int, []string) {
		items := listSlices(ctx, client, "web")
		var n []int
		for _, s := range items {
			n = append(n, len(s.Endpoints))
		}
		slices.Sort(n)
		return n, names(items)
	}
	var before []string
	ctrltest.Eventually(t, "slices of 10, 10 and 5", func(ctx context.Context) (bool, string) {
		n, names := sizes(ctx)
		before = names
		return slices.Equal(n, []int{5, 10, 10}), fmt.Sprint(n)
	})
	for i := range 12 {
		if err := client.CoreV1().Pods("default").Delete(t.Context(), fmt.Sprintf("p%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctrltest.Eventually(t, "13 endpoints in the old slices", func(ctx context.Context) (bool, string) {
		n, names := sizes(ctx)
		total := 0
		for _, x := range n {
			total += x
		}
		sub := true
		for _, name := range names {
			sub = sub && slices.Contains(before, name)
		}
		return total == 13 && slices.Max(n) <= 10 && sub, fmt.Sprintf("%v %v (before %v)", n, names, before)
	})
}

// TestLeftAlone: no slices for services without a selector or of type
// ExternalName; a headless service gets slices of both families (it has
// no ipFamilies here) and the headless label.
func TestLeftAlone(t *testing.T) {
	manual := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}}
	external := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com", Selector: map[string]string{"app": "web"}}}
	headless := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "db-uid"},
		Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "web"}}}
	client := start(t, nil, manual, external, headless, node("node-1", ""), testPod("a", "node-1", "10.0.0.1", true))
	items := waitSlices(t, client, "db", "IPv4  [a=10.0.0.1/RS-]", "IPv6  []")
	if _, ok := items[0].Labels[v1.IsHeadlessService]; !ok {
		t.Errorf("labels %v, want %s", items[0].Labels, v1.IsHeadlessService)
	}
	for _, svc := range []string{"kubernetes", "ext"} {
		if got := listSlices(t.Context(), client, svc); len(got) != 0 {
			t.Errorf("%s: %d slices, want none", svc, len(got))
		}
	}
}

// TestServiceDeletion: the slices are owned by the service, so the
// garbage collector deletes them with it.
func TestServiceDeletion(t *testing.T) {
	client := ctrltest.NewClientset(webService(), node("node-1", ""), testPod("a", "node-1", "10.0.0.1", true, httpPort(8080)))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, ctrltest.Logger(t))
	gc := garbagecollector.New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return c.Run(ctx, 2) }, func(ctx context.Context) error { return gc.Run(ctx, 2) })
	waitSlices(t, client, "web", "IPv4 http:8080,metrics:9090 [a=10.0.0.1/RS-]")
	if err := client.CoreV1().Services("default").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "web")
}
