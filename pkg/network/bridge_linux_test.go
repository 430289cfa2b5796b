package network

import (
	"strings"
	"testing"
)

// A bridge left with the gateway of an earlier pod CIDR loses it; the
// current gateway and link-local addresses stay.
func TestClearBridgeAddresses(t *testing.T) {
	ns := newNetns(t)
	ip(t, ns, "link", "add", "cbr0", "type", "bridge")
	ip(t, ns, "addr", "add", "10.244.1.1/24", "dev", "cbr0")
	ip(t, ns, "addr", "add", "10.244.2.1/24", "dev", "cbr0")
	// No pod CIDR (a Node registered again, waiting for one): nothing can
	// be told stale, nothing goes.
	for _, none := range [][]string{nil, {"not a CIDR"}} {
		if err := inNetns(ns, func() error { return ClearBridgeAddresses("cbr0", none) }); err != nil {
			t.Fatal(err)
		}
		if out := ip(t, ns, "-4", "addr", "show", "dev", "cbr0"); !strings.Contains(out, "10.244.1.1/24") || !strings.Contains(out, "10.244.2.1/24") {
			t.Errorf("cbr0 after clearing with pod CIDRs %q:\n%s", none, out)
		}
	}
	if err := inNetns(ns, func() error { return ClearBridgeAddresses("cbr0", []string{"10.244.2.0/24"}) }); err != nil {
		t.Fatal(err)
	}
	out := ip(t, ns, "-4", "addr", "show", "dev", "cbr0")
	if strings.Contains(out, "10.244.1.1") || !strings.Contains(out, "10.244.2.1/24") {
		t.Errorf("cbr0 after clearing:\n%s", out)
	}
	// No bridge yet: nothing to do.
	if err := inNetns(ns, func() error { return ClearBridgeAddresses("nosuch0", []string{"10.244.2.0/24"}) }); err != nil {
		t.Errorf("missing bridge: %v", err)
	}
}
