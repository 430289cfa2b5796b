package proxy

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

var dnsPort = ServicePortName{NamespacedName: types.NamespacedName{Namespace: "kube-system", Name: "dns"}, Port: "dns",
	Protocol: v1.ProtocolUDP}

func dnsState(nodePort int32, endpoints ...Endpoint) *ServicePort {
	return &ServicePort{Name: dnsPort, ClusterIP: mustAddr("10.96.0.10"), Port: 53, NodePort: nodePort, Endpoints: endpoints}
}

func TestStaleFlowFilters(t *testing.T) {
	a := Endpoint{IP: mustAddr("10.244.1.2"), Port: 53}
	b := Endpoint{IP: mustAddr("10.244.2.3"), Port: 53}
	cip := func(keep ...Endpoint) FlowFilter {
		return FlowFilter{Protocol: v1.ProtocolUDP, Dst: mustAddr("10.96.0.10"), Port: 53, Keep: keep}
	}
	np := func(port int32, keep ...Endpoint) FlowFilter {
		return FlowFilter{Protocol: v1.ProtocolUDP, Port: port, Keep: keep}
	}
	tcp := dnsState(0, a)
	tcp.Name.Protocol = v1.ProtocolTCP
	moved := dnsState(0, a, b)
	moved.ClusterIP = mustAddr("10.96.0.11")
	for _, tc := range []struct {
		name      string
		old, cur  *ServicePort
		reconcile bool
		want      []FlowFilter
	}{
		{"endpoint lost", dnsState(0, a, b), dnsState(0, a), false, []FlowFilter{cip(a)}},
		{"endpoint lost, with NodePort", dnsState(30053, a, b), dnsState(30053, b), false,
			[]FlowFilter{cip(b), np(30053, b)}},
		{"endpoint replaced", dnsState(0, a), dnsState(0, b), false, []FlowFilter{cip(b)}},
		{"endpoint added: nothing is stale", dnsState(30053, a), dnsState(30053, a, b), false, nil},
		{"first endpoints", dnsState(30053), dnsState(30053, a), false, []FlowFilter{cip(a), np(30053, a)}},
		{"new port with endpoints", nil, dnsState(0, a), false, []FlowFilter{cip(a)}},
		{"new port without endpoints", nil, dnsState(0), false, nil},
		{"all endpoints lost", dnsState(30053, a), dnsState(30053), false, []FlowFilter{cip(), np(30053)}},
		{"port removed", dnsState(30053, a), nil, false, []FlowFilter{cip(), np(30053)}},
		{"NodePort changed", dnsState(30053, a), dnsState(30054, a), false, []FlowFilter{np(30053), np(30054, a)}},
		{"NodePort added", dnsState(0, a), dnsState(30054, a), false, []FlowFilter{np(30054, a)}},
		{"NodePort dropped", dnsState(30053, a), dnsState(0, a), false, []FlowFilter{np(30053)}},
		{"cluster IP changed", dnsState(0, a), moved, false,
			[]FlowFilter{cip(), {Protocol: v1.ProtocolUDP, Dst: mustAddr("10.96.0.11"), Port: 53, Keep: []Endpoint{a, b}}}},
		{"unchanged", dnsState(0, a), dnsState(0, a), false, nil},
		{"full sync reconciles", dnsState(30053, a), dnsState(30053, a), true, []FlowFilter{cip(a), np(30053, a)}},
		{"full sync of an unknown port", nil, dnsState(0), true, []FlowFilter{cip()}},
		{"TCP", tcp, nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleFlowFilters(tc.old, tc.cur, tc.reconcile); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFlowMatcher(t *testing.T) {
	ep := netip.MustParseAddrPort
	m := newFlowMatcher([]FlowFilter{
		{Protocol: v1.ProtocolUDP, Dst: mustAddr("10.96.0.10"), Port: 53, Keep: eps("10.244.1.2:53")},
		{Protocol: v1.ProtocolUDP, Port: 53, Keep: eps("10.244.9.9:53")}, // a NodePort 53
		{Protocol: v1.ProtocolUDP, Port: 30053},
	})
	for _, tc := range []struct {
		flow  Flow
		stale bool
	}{
		{Flow{v1.ProtocolUDP, ep("10.96.0.10:53"), ep("10.244.1.2:53")}, false},  // to the kept endpoint
		{Flow{v1.ProtocolUDP, ep("10.96.0.10:53"), ep("10.244.2.3:53")}, true},   // to a gone one
		{Flow{v1.ProtocolUDP, ep("10.96.0.10:53"), ep("10.244.1.2:5353")}, true}, // its old target port
		{Flow{v1.ProtocolUDP, ep("10.96.0.10:53"), ep("10.96.0.10:53")}, true},   // not DNATed
		{Flow{v1.ProtocolTCP, ep("10.96.0.10:53"), ep("10.244.2.3:53")}, false},  // TCP
		{Flow{v1.ProtocolUDP, ep("10.96.0.11:53"), ep("10.244.2.3:53")}, true},   // the NodePort filter
		{Flow{v1.ProtocolUDP, ep("10.0.0.2:53"), ep("10.244.9.9:53")}, false},
		{Flow{v1.ProtocolUDP, ep("10.0.0.2:30053"), ep("10.244.1.2:53")}, true},
		{Flow{v1.ProtocolUDP, ep("10.0.0.2:30054"), ep("10.244.1.2:53")}, false},
	} {
		if got := m.stale(tc.flow); got != tc.stale {
			t.Errorf("%+v: stale %v, want %v", tc.flow, got, tc.stale)
		}
	}
}

// The Proxier asks for the deletions after the rules are applied, only
// for UDP ports that lost endpoints or gained their first ones, and for
// all UDP ports in full syncs. A failure does not fail the sync.
func TestProxierClearsStaleUDPFlows(t *testing.T) {
	ct := &fakeConntrack{}
	cfg := Config{Conntrack: ct, Clock: newTestClock()}
	p, _, _ := newFakeProxier(t, cfg)
	ctx := context.Background()
	dns := service("kube-system", "dns", "10.96.0.10", []v1.ServicePort{udpPort("dns", 53)}, withNodePort(30053))
	web, webEPs := twoServices()
	svcs := append([]*v1.Service{dns}, web...)
	sync := func(dnsEPs ...discoveryv1.Endpoint) SyncResult {
		t.Helper()
		res, err := p.Sync(ctx, svcs, append([]*discoveryv1.EndpointSlice{
			udpSlice("kube-system", "dns", "dns-1", "dns", 5353, dnsEPs...)}, webEPs...))
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
		return res
	}
	cip := func(keep ...string) FlowFilter {
		return FlowFilter{Protocol: v1.ProtocolUDP, Dst: mustAddr("10.96.0.10"), Port: 53, Keep: eps(keep...)}
	}
	np := func(keep ...string) FlowFilter {
		return FlowFilter{Protocol: v1.ProtocolUDP, Port: 30053, Keep: eps(keep...)}
	}
	want := func(what string, calls ...[]FlowFilter) {
		t.Helper()
		if got := ct.take(); !reflect.DeepEqual(got, calls) {
			t.Errorf("%s: asked %+v\nwant %+v", what, got, calls)
		}
	}

	sync(ep("10.244.1.2"), ep("10.244.2.3"))
	want("first (full) sync", []FlowFilter{cip("10.244.1.2:5353", "10.244.2.3:5353"), np("10.244.1.2:5353", "10.244.2.3:5353")})
	sync(ep("10.244.1.2"), ep("10.244.2.3"), ep("10.244.3.4"))
	want("endpoint added")
	if res := sync(ep("10.244.1.2"), ep("10.244.3.4")); res.ConntrackDeleted != 2 {
		t.Errorf("result %+v, want 2 deletions", res)
	}
	want("endpoint removed", []FlowFilter{cip("10.244.1.2:5353", "10.244.3.4:5353"), np("10.244.1.2:5353", "10.244.3.4:5353")})
	webEPs = webEPs[1:]
	sync(ep("10.244.1.2"), ep("10.244.3.4"))
	want("TCP service lost its endpoints")
	sync()
	want("no endpoints left", []FlowFilter{cip(), np()})
	ct.err = errors.New("no conntrack")
	sync(ep("10.244.1.2"))
	want("first endpoint again", []FlowFilter{cip("10.244.1.2:5353"), np("10.244.1.2:5353")})
	ct.err = nil
	svcs = svcs[1:]
	sync()
	want("service removed", []FlowFilter{cip(), np()})
}
