package nodeipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNewCIDRSetRejects(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
		want    string
	}{
		{"fd00::/48", 64, "not IPv4"},
		{"10.0.0.0/16", 15, "shorter than the cluster CIDR"},
		{"10.0.0.0/16", 33, "longer than an IPv4 address"},
		{"10.0.0.0/4", 30, "more than 2^24 blocks"},
	} {
		_, err := NewCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCIDRSet(%s, %d) = %v, want an error containing %q", tc.cluster, tc.mask, err, tc.want)
		}
	}
}

func TestCIDRSetAllocate(t *testing.T) {
	set, err := NewCIDRSet(netip.MustParsePrefix("10.244.7.9/22"), 24) // host bits are dropped
	if err != nil {
		t.Fatal(err)
	}
	mustAlloc := func(want string) {
		t.Helper()
		got, err := set.AllocateNext()
		if err != nil || got.String() != want {
			t.Fatalf("AllocateNext() = %v, %v; want %s", got, err, want)
		}
	}
	if err := set.Occupy(netip.MustParsePrefix("10.244.5.0/24")); err != nil {
		t.Fatal(err)
	}
	mustAlloc("10.244.4.0/24")
	mustAlloc("10.244.6.0/24") // 5 is occupied
	mustAlloc("10.244.7.0/24")
	if _, err := set.AllocateNext(); !errors.Is(err, ErrNoCIDRsRemaining) {
		t.Fatalf("exhausted range: got %v, want ErrNoCIDRsRemaining", err)
	}
	if err := set.Release(netip.MustParsePrefix("10.244.6.0/24")); err != nil {
		t.Fatal(err)
	}
	if set.Free() != 1 {
		t.Fatalf("Free() = %d after one release, want 1", set.Free())
	}
	mustAlloc("10.244.6.0/24")
}

func TestCIDRSetOccupySpans(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		free int // of the 4 blocks of 10.0.0.0/22 in /24s
	}{
		{"10.0.1.128/25", 3}, // inside one block: that block
		{"10.0.2.0/23", 2},   // two blocks
		{"10.0.0.0/22", 0},   // the whole range
		{"10.0.0.0/8", 0},    // a supernet: the whole range
	} {
		set, err := NewCIDRSet(netip.MustParsePrefix("10.0.0.0/22"), 24)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Occupy(netip.MustParsePrefix(tc.cidr)); err != nil {
			t.Fatalf("Occupy(%s): %v", tc.cidr, err)
		}
		if set.Free() != tc.free {
			t.Errorf("Occupy(%s): %d free, want %d", tc.cidr, set.Free(), tc.free)
		}
		// Occupying twice counts once.
		_ = set.Occupy(netip.MustParsePrefix(tc.cidr))
		if set.Free() != tc.free {
			t.Errorf("Occupy(%s) twice: %d free, want %d", tc.cidr, set.Free(), tc.free)
		}
	}
	set, _ := NewCIDRSet(netip.MustParsePrefix("10.0.0.0/22"), 24)
	for _, bad := range []string{"10.1.0.0/24", "fd00::/64"} {
		if err := set.Occupy(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("Occupy(%s) outside the range: no error", bad)
		}
	}
}

func TestCIDRSetWholeRangeAsOneBlock(t *testing.T) {
	set, err := NewCIDRSet(netip.MustParsePrefix("192.168.0.0/24"), 24)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := set.AllocateNext(); err != nil || p.String() != "192.168.0.0/24" {
		t.Fatalf("AllocateNext() = %v, %v", p, err)
	}
	if _, err := set.AllocateNext(); err == nil {
		t.Fatal("second allocation of a one-block range succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ClusterCIDR: "10.244.0.0"}, "invalid --cluster-cidr"},
		{Config{ClusterCIDR: "fd00::/48"}, "only an IPv4 range"},
		{Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 8}, "--node-cidr-mask-size 8"},
		{Config{NodeCIDRMaskSize: -1}, "must be positive"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}
