package proxy

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func eps(addrPorts ...string) []Endpoint {
	var out []Endpoint
	for _, s := range addrPorts {
		ap := netip.MustParseAddrPort(s)
		out = append(out, Endpoint{IP: ap.Addr(), Port: int32(ap.Port())})
	}
	return out
}

func TestEndpointSelection(t *testing.T) {
	for _, tc := range []struct {
		name string
		eps  []discoveryv1.Endpoint
		want []Endpoint
	}{
		{"nil conditions count as ready", []discoveryv1.Endpoint{ep("10.0.0.2")}, eps("10.0.0.2:8080")},
		{"not ready left out",
			[]discoveryv1.Endpoint{ep("10.0.0.2", "ready", "serving"), ep("10.0.0.3")},
			eps("10.0.0.2:8080", "10.0.0.3:8080")},
		{"not ready and not terminating never used",
			[]discoveryv1.Endpoint{ep("10.0.0.2", "serving"), ep("10.0.0.3", "ready")},
			eps("10.0.0.3:8080")},
		{"terminating ignored while one is ready",
			[]discoveryv1.Endpoint{ep("10.0.0.2", "serving", "terminating"), ep("10.0.0.3", "ready", "serving")},
			eps("10.0.0.3:8080")},
		{"serving terminating when none is ready",
			[]discoveryv1.Endpoint{ep("10.0.0.2", "serving", "terminating"), ep("10.0.0.4", "terminating"),
				ep("10.0.0.3", "serving", "terminating")},
			eps("10.0.0.2:8080", "10.0.0.3:8080")},
		{"none usable", []discoveryv1.Endpoint{ep("10.0.0.2", "terminating"), ep("10.0.0.3", "serving")}, nil},
		{"sorted by address",
			[]discoveryv1.Endpoint{ep("10.0.0.10"), ep("10.0.0.9"), ep("10.0.0.2")},
			eps("10.0.0.2:8080", "10.0.0.9:8080", "10.0.0.10:8080")},
		{"no address or not IPv4 skipped",
			[]discoveryv1.Endpoint{{}, ep("fd00::1"), ep("10.0.0.2")},
			eps("10.0.0.2:8080")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)})
			got := BuildServicePorts([]*v1.Service{svc},
				[]*discoveryv1.EndpointSlice{slice("ns", "web", "web-1", "http", 8080, tc.eps...)})
			if len(got) != 1 {
				t.Fatalf("got %d ports, want 1", len(got))
			}
			if !slices.Equal(got[0].Endpoints, tc.want) {
				t.Errorf("endpoints = %v, want %v", got[0].Endpoints, tc.want)
			}
		})
	}
}

func TestEndpointsAcrossSlices(t *testing.T) {
	svc := service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)})
	other := slice("ns", "web", "web-v6", "http", 8080, ep("fd00::1"))
	other.AddressType = discoveryv1.AddressTypeIPv6
	got := BuildServicePorts([]*v1.Service{svc}, []*discoveryv1.EndpointSlice{
		// The same endpoint in two slices (the controller moving it)
		// counts once, in its best state.
		slice("ns", "web", "web-1", "http", 8080, ep("10.0.0.3", "terminating"), ep("10.0.0.4")),
		slice("ns", "web", "web-2", "http", 8080, ep("10.0.0.3", "ready", "serving"), ep("10.0.0.2")),
		slice("ns", "other", "other-1", "http", 8080, ep("10.0.0.9")),
		slice("elsewhere", "web", "web-1", "http", 8080, ep("10.0.0.8")),
		other,
	})
	if want := eps("10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080"); !slices.Equal(got[0].Endpoints, want) {
		t.Errorf("endpoints = %v, want %v", got[0].Endpoints, want)
	}
}

func TestNamedPorts(t *testing.T) {
	svc := service("ns", "app", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80), tcpPort("metrics", 9090),
		{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}})
	s := slice("ns", "app", "app-1", "http", 8080, ep("10.0.0.2"))
	// Target ports the controller resolved per pod; "dns" exists only
	// for TCP in the slice, so the UDP service port has no endpoints.
	s.Ports = append(s.Ports,
		discoveryv1.EndpointPort{Name: ptr.To("metrics"), Port: ptr.To[int32](9100)},
		discoveryv1.EndpointPort{Name: ptr.To("dns"), Port: ptr.To[int32](5353), Protocol: ptr.To(v1.ProtocolTCP)})
	got := BuildServicePorts([]*v1.Service{svc}, []*discoveryv1.EndpointSlice{s})
	want := map[string][]Endpoint{
		"ns/app:http/tcp":    eps("10.0.0.2:8080"),
		"ns/app:metrics/tcp": eps("10.0.0.2:9100"),
		"ns/app:dns/udp":     nil,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d ports: %v", len(got), got)
	}
	for _, p := range got {
		if w, ok := want[p.Name.String()]; !ok || !slices.Equal(p.Endpoints, w) {
			t.Errorf("%s: endpoints %v, want %v", p.Name, p.Endpoints, w)
		}
	}
	// Sorted by name: dns, http, metrics.
	if got[0].Name.Port != "dns" || got[2].Name.Port != "metrics" {
		t.Errorf("not sorted: %v", got)
	}
}

func TestServiceFields(t *testing.T) {
	lb := service("ns", "lb", "10.96.0.13", []v1.ServicePort{tcpPort("", 80)}, withNodePort(30001))
	lb.Spec.Type = v1.ServiceTypeLoadBalancer
	stray := service("ns", "plain", "10.96.0.14", []v1.ServicePort{tcpPort("", 80)})
	stray.Spec.Ports[0].NodePort = 30002 // not a NodePort service: ignored
	dual := service("ns", "dual", "fd00::10", []v1.ServicePort{tcpPort("", 80)})
	dual.Spec.ClusterIPs = []string{"fd00::10", "10.96.0.15"}
	for _, tc := range []struct {
		svc      *v1.Service
		ip       string
		nodePort int32
		affinity time.Duration
	}{
		{service("ns", "np", "10.96.0.10", []v1.ServicePort{tcpPort("", 80)}, withNodePort(30000)), "10.96.0.10", 30000, 0},
		{lb, "10.96.0.13", 30001, 0},
		{stray, "10.96.0.14", 0, 0},
		{service("ns", "aff", "10.96.0.11", []v1.ServicePort{tcpPort("", 80)}, withAffinity(nil)),
			"10.96.0.11", 0, 10800 * time.Second},
		{service("ns", "aff2", "10.96.0.12", []v1.ServicePort{tcpPort("", 80)}, withAffinity(ptr.To[int32](30))),
			"10.96.0.12", 0, 30 * time.Second},
		{dual, "10.96.0.15", 0, 0},
	} {
		t.Run(tc.svc.Name, func(t *testing.T) {
			got := BuildServicePorts([]*v1.Service{tc.svc}, nil)
			if len(got) != 1 {
				t.Fatalf("got %d ports", len(got))
			}
			p := got[0]
			if p.ClusterIP.String() != tc.ip || p.NodePort != tc.nodePort || p.AffinityTimeout != tc.affinity {
				t.Errorf("got ip %s nodePort %d affinity %s, want %s %d %s",
					p.ClusterIP, p.NodePort, p.AffinityTimeout, tc.ip, tc.nodePort, tc.affinity)
			}
		})
	}
}

func TestSkippedServices(t *testing.T) {
	headless := service("ns", "headless", v1.ClusterIPNone, []v1.ServicePort{tcpPort("", 80)})
	external := service("ns", "ext", "", nil)
	external.Spec.Type = v1.ServiceTypeExternalName
	external.Spec.ExternalName = "example.com"
	otherProxy := service("ns", "other", "10.96.0.11", []v1.ServicePort{tcpPort("", 80)})
	otherProxy.Labels = map[string]string{LabelServiceProxyName: "someone-else"}
	v6 := service("ns", "v6", "fd00::1", []v1.ServicePort{tcpPort("", 80)})
	kept := service("ns", "kept", "10.96.0.10", []v1.ServicePort{tcpPort("", 80)})
	got := BuildServicePorts([]*v1.Service{headless, external, otherProxy, v6, kept},
		[]*discoveryv1.EndpointSlice{slice("ns", "headless", "h-1", "", 80, ep("10.0.0.2"))})
	if len(got) != 1 || got[0].Name.NamespacedName != (types.NamespacedName{Namespace: "ns", Name: "kept"}) {
		t.Errorf("got %v, want only ns/kept", got)
	}
}
