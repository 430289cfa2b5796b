package network

import (
	"context"
	"net"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"
)

func TestMasquerade(t *testing.T) {
	_, other, _ := net.ParseCIDR("10.244.2.0/24")
	_, v6, _ := net.ParseCIDR("fd00:2::/64")
	src, dst := MasqueradePlan([]string{"10.244.1.0/24", "fd00:1::/64"}, []NodeRoute{{Dst: other}, {Dst: v6}})
	if strings.Join(src, ",") != "10.244.1.0/24" || strings.Join(dst, ",") != "10.244.1.0/24,10.244.2.0/24" {
		t.Fatalf("plan = %v %v", src, dst)
	}
	fake := knftables.NewFake(knftables.IPv4Family, MasqueradeTable)
	m := &Masquerade{nft: fake}
	if err := m.Apply(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	// A node leaves: its CIDR is no longer exempt.
	if err := m.Apply(context.Background(), src, dst[:1]); err != nil {
		t.Fatal(err)
	}
	dump := fake.Dump()
	for _, want := range []string{
		"add rule ip nodeagent-kubenet postrouting ip saddr 10.244.1.0/24 ip daddr != @pod-cidrs fib daddr type != local masquerade",
		"add element ip nodeagent-kubenet pod-cidrs { 10.244.1.0/24 }",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "10.244.2.0/24") || strings.Count(dump, " masquerade\n") != 1 {
		t.Errorf("stale element or repeated rule:\n%s", dump)
	}
}

// A pod CIDR PlanRoutes refuses is not exempt from masquerade either: a
// node claiming 0.0.0.0/1 does not switch off the NAT of every pod.
func TestMasqueradeExemptsOnlyPlannedCIDRs(t *testing.T) {
	plan, refused := PlanRoutes("a", []*v1.Node{
		node("a", []string{"10.244.0.0/24"}, "192.168.0.1"),
		node("b", []string{"10.244.1.0/24"}, "192.168.0.2"),
		node("h", []string{"0.0.0.0/1"}, "192.168.0.3"),
	}, RoutePolicy{})
	if len(refused) != 1 {
		t.Fatalf("refused = %v; want the /1", refused)
	}
	_, dst := MasqueradePlan([]string{"10.244.0.0/24"}, plan)
	if got := strings.Join(dst, ","); got != "10.244.0.0/24,10.244.1.0/24" {
		t.Errorf("exempt destinations = %s; want only the pod CIDRs of a and b", got)
	}
}
