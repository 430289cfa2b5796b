package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

var (
	webPort   = ServicePortName{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}, Port: "http", Protocol: v1.ProtocolTCP}
	webEP1    = Endpoint{IP: mustAddr("10.244.1.2"), Port: 8080}
	webEP2    = Endpoint{IP: mustAddr("10.244.2.3"), Port: 8080}
	emptyPort = ServicePortName{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "empty"}, Protocol: v1.ProtocolTCP}
)

// renderState is a service with 2 endpoints, affinity and a NodePort, and
// one without endpoints but with a NodePort.
func renderState() ([]*v1.Service, []*discoveryv1.EndpointSlice) {
	return []*v1.Service{
			service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)},
				withNodePort(30080), withAffinity(ptr.To[int32](60))),
			service("ns", "empty", "10.96.0.11", []v1.ServicePort{tcpPort("", 80)}, withNodePort(30081)),
		}, []*discoveryv1.EndpointSlice{
			slice("ns", "web", "web-1", "http", 8080, ep("10.244.2.3"), ep("10.244.1.2")),
		}
}

func chainRules(t *testing.T, fake *knftables.Fake, name string) []string {
	t.Helper()
	c := fake.Table.Chains[name]
	if c == nil {
		t.Fatalf("no chain %q in:\n%s", name, fake.Dump())
	}
	var out []string
	for _, r := range c.Rules {
		out = append(out, r.Rule)
	}
	return out
}

func wantRules(t *testing.T, fake *knftables.Fake, chain string, want ...string) {
	t.Helper()
	if got := chainRules(t, fake, chain); !slices.Equal(got, want) {
		t.Errorf("chain %s:\n got %q\nwant %q", chain, got, want)
	}
}

func wantElement(t *testing.T, fake *knftables.Fake, mapName, value string, key ...string) {
	t.Helper()
	m := fake.Table.Maps[mapName]
	if m == nil {
		t.Fatalf("no map %q", mapName)
	}
	e := m.FindElement(key...)
	if e == nil || !slices.Equal(e.Value, []string{value}) {
		t.Errorf("map %s[%v] = %v, want %q", mapName, key, e, value)
	}
}

func TestRenderRuleset(t *testing.T) {
	p, fake, _ := newFakeProxier(t, Config{ClusterCIDR: "10.244.0.0/16"})
	svcs, sls := renderState()
	if _, err := p.Sync(context.Background(), svcs, sls); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// Names are stable across runs and versions: the rules of a running
	// node are found again by them after a restart.
	svc, ext := serviceChain(webPort), externalChain(webPort)
	if svc != "service-Y6QD5CCT-ns/web/tcp/http" || ext != "external-Y6QD5CCT-ns/web/tcp/http" {
		t.Errorf("chain names changed: %s %s", svc, ext)
	}
	ep1, ep2 := endpointChain(webPort, webEP1), endpointChain(webPort, webEP2)
	aff1, aff2 := affinitySet(webPort, webEP1, 60e9), affinitySet(webPort, webEP2, 60e9)

	wantRules(t, fake, servicesChain,
		"ip daddr . meta l4proto . th dport vmap @service-ips",
		"fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports")
	wantRules(t, fake, natPreroutingChain, "jump services")
	wantRules(t, fake, natOutputChain, "jump services")
	wantRules(t, fake, natPostroutingChain, "jump masquerading")
	wantRules(t, fake, masqueradingChain,
		"mark and 0x4000 == 0 return", "mark set mark xor 0x4000", "masquerade fully-random")
	wantRules(t, fake, filterOutputChain, "ct state new jump service-endpoints-check")
	wantRules(t, fake, serviceEndpointsCheckChain, "ip daddr . meta l4proto . th dport vmap @no-endpoint-services")
	wantRules(t, fake, rejectChain, "reject")
	if c := fake.Table.Chains[natOutputChain]; c == nil || c.Hook == nil || *c.Hook != knftables.OutputHook {
		t.Errorf("nat-output is not a base chain on the output hook")
	}

	// Service: masquerade off-cluster clients, then affinity, then a
	// random endpoint (endpoints in address order).
	wantRules(t, fake, svc,
		"ip daddr 10.96.0.10 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		"ip saddr @"+aff1+" goto "+ep1,
		"ip saddr @"+aff2+" goto "+ep2,
		"numgen random mod 2 vmap { 0 : goto "+ep1+" , 1 : goto "+ep2+" }")
	wantRules(t, fake, ep1,
		"ip saddr 10.244.1.2 jump mark-for-masquerade",
		"update @"+aff1+" { ip saddr }",
		"meta l4proto tcp dnat to 10.244.1.2:8080")
	wantRules(t, fake, ep2,
		"ip saddr 10.244.2.3 jump mark-for-masquerade",
		"update @"+aff2+" { ip saddr }",
		"meta l4proto tcp dnat to 10.244.2.3:8080")
	wantRules(t, fake, ext, "jump mark-for-masquerade", "goto "+svc)
	for _, s := range []string{aff1, aff2} {
		set := fake.Table.Sets[s]
		if set == nil || set.Timeout == nil || set.Timeout.Seconds() != 60 ||
			!slices.Contains(set.Flags, knftables.TimeoutFlag) {
			t.Errorf("affinity set %s: %+v", s, set)
		}
	}

	wantElement(t, fake, serviceIPsMap, "goto "+svc, "10.96.0.10", "tcp", "80")
	wantElement(t, fake, serviceNodePortsMap, "goto "+ext, "tcp", "30080")
	// No endpoints: rejected by the filter chains, and no nat objects.
	wantElement(t, fake, noEndpointServicesMap, "goto reject-chain", "10.96.0.11", "tcp", "80")
	wantElement(t, fake, noEndpointNodePortsMap, "goto reject-chain", "tcp", "30081")
	if e := fake.Table.Maps[serviceIPsMap].FindElement("10.96.0.11", "tcp", "80"); e != nil {
		t.Errorf("service without endpoints in service-ips: %v", e)
	}
	if c := fake.Table.Chains[serviceChain(emptyPort)]; c != nil {
		t.Errorf("service without endpoints has a chain")
	}
}

func TestRenderMasqueradeAllWithoutClusterCIDR(t *testing.T) {
	p, fake, _ := newFakeProxier(t, Config{})
	svcs, sls := renderState()
	if _, err := p.Sync(context.Background(), svcs, sls); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got := chainRules(t, fake, serviceChain(webPort))
	if got[0] != "ip daddr 10.96.0.10 tcp dport 80 jump mark-for-masquerade" {
		t.Errorf("first rule %q, want masquerade of all service traffic", got[0])
	}
}

func TestRenderNoAffinity(t *testing.T) {
	p, fake, _ := newFakeProxier(t, Config{ClusterCIDR: "10.244.0.0/16"})
	svc := service("ns", "web", "10.96.0.10", []v1.ServicePort{tcpPort("http", 80)})
	_, err := p.Sync(context.Background(), []*v1.Service{svc},
		[]*discoveryv1.EndpointSlice{slice("ns", "web", "web-1", "http", 8080, ep("10.244.1.2"))})
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	ep1 := endpointChain(webPort, webEP1)
	wantRules(t, fake, serviceChain(webPort),
		"ip daddr 10.96.0.10 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		"numgen random mod 1 vmap { 0 : goto "+ep1+" }")
	wantRules(t, fake, ep1, "ip saddr 10.244.1.2 jump mark-for-masquerade", "meta l4proto tcp dnat to 10.244.1.2:8080")
	if len(fake.Table.Sets) != 0 || fake.Table.Chains[externalChain(webPort)] != nil {
		t.Errorf("unexpected affinity sets or external chain:\n%s", fake.Dump())
	}
}

func TestNamesFitAndStayDistinct(t *testing.T) {
	long := strings.Repeat("a", 63)
	n := ServicePortName{NamespacedName: types.NamespacedName{Namespace: long, Name: long}, Port: long, Protocol: v1.ProtocolSCTP}
	e1, e2 := Endpoint{IP: mustAddr("10.0.0.1"), Port: 65535}, Endpoint{IP: mustAddr("10.0.0.2"), Port: 65535}
	names := []string{serviceChain(n), externalChain(n), endpointChain(n, e1), endpointChain(n, e2),
		affinitySet(n, e1, 10e9), affinitySet(n, e1, 20e9)}
	seen := map[string]bool{}
	for _, name := range names {
		if len(name) >= knftables.NameLengthMax {
			t.Errorf("%d characters: %s", len(name), name)
		}
		if seen[name] {
			t.Errorf("duplicate name %s", name)
		}
		seen[name] = true
	}
	if endpointChain(n, e1) != endpointChain(n, e1) {
		t.Errorf("names are not deterministic")
	}
}
