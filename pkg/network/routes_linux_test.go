package network

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// routesIn lists, with ip, the routes of protocol proto in ns's main table
// as "dst via gateway".
func routesIn(t *testing.T, ns int, proto uint8) []string {
	t.Helper()
	var out []string
	for _, family := range []string{"-4", "-6"} {
		var rs []struct{ Dst, Gateway string }
		js := ip(t, ns, "-j", family, "route", "show", "proto", strconv.Itoa(int(proto)))
		if err := json.Unmarshal([]byte(js), &rs); err != nil {
			t.Fatalf("parse ip -j route: %v\n%s", err, js)
		}
		for _, r := range rs {
			out = append(out, r.Dst+" via "+r.Gateway)
		}
	}
	slices.Sort(out)
	return out
}

func wantRoutesIn(t *testing.T, ns int, proto uint8, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := routesIn(t, ns, proto); !reflect.DeepEqual(got, want) {
		t.Errorf("routes of protocol %d = %q\nwant %q", proto, got, want)
	}
}

// newRoutesNetns is a namespace with a link whose subnets hold the test's
// gateways (veth: this kernel has no dummy driver), and a Routes in it.
func newRoutesNetns(t *testing.T) (int, *Routes) {
	t.Helper()
	ns := newNetns(t)
	ip(t, ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	ip(t, ns, "link", "set", "v0", "up")
	ip(t, ns, "link", "set", "v1", "up")
	ip(t, ns, "addr", "add", "10.99.0.1/24", "dev", "v0")
	ip(t, ns, "-6", "addr", "add", "fd99::1/64", "dev", "v0", "nodad")
	r, err := NewRoutes(RoutesConfig{NetNS: ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewRoutes: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() }) // before the namespace's cleanup: LIFO
	return ns, r
}

func TestRoutesApply(t *testing.T) {
	ns, r := newRoutesNetns(t)
	ctx := context.Background()
	// Someone else's routes (protocol static): one aside, one on a
	// destination the plan will want.
	ip(t, ns, "route", "add", "10.250.0.0/24", "via", "10.99.0.50", "proto", "static")
	ip(t, ns, "route", "add", "10.244.5.0/24", "via", "10.99.0.50", "proto", "static")
	const static = 4
	foreign := []string{"10.244.5.0/24 via 10.99.0.50", "10.250.0.0/24 via 10.99.0.50"}

	b := route("10.244.1.0/24", "10.99.0.2", "b")
	c := route("10.244.2.0/24", "10.99.0.3", "c")
	b6 := route("fd00:1::/64", "fd99::2", "b")
	full := []NodeRoute{b, c, b6}
	for i := range 2 { // the second pass finds everything in place
		if err := r.Apply(ctx, full); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		wantRoutesIn(t, ns, RouteProtocol, "10.244.1.0/24 via 10.99.0.2", "10.244.2.0/24 via 10.99.0.3", "fd00:1::/64 via fd99::2")
	}
	listed, err := r.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got, want := routeStrings(listed), []string{"10.244.1.0/24 via 10.99.0.2", "10.244.2.0/24 via 10.99.0.3", "fd00:1::/64 via fd99::2"}; !reflect.DeepEqual(sorted(got), want) {
		t.Errorf("List = %q, want %q", got, want)
	}

	// Smaller plan: node c is gone and node b moved.
	bMoved := route("10.244.1.0/24", "10.99.0.22", "b")
	if err := r.Apply(ctx, []NodeRoute{bMoved, b6}); err != nil {
		t.Fatalf("Apply smaller plan: %v", err)
	}
	wantRoutesIn(t, ns, RouteProtocol, "10.244.1.0/24 via 10.99.0.22", "fd00:1::/64 via fd99::2")
	wantRoutesIn(t, ns, static, foreign...)

	// A destination held by a foreign route is reported and left alone;
	// the rest of the plan still applies.
	e := route("10.244.5.0/24", "10.99.0.5", "e")
	err = r.Apply(ctx, []NodeRoute{b6, e})
	if err == nil || !strings.Contains(err.Error(), "not ours") || !strings.Contains(err.Error(), "10.244.5.0/24") {
		t.Errorf("Apply onto a foreign route = %v; want an error naming it", err)
	}
	wantRoutesIn(t, ns, RouteProtocol, "fd00:1::/64 via fd99::2")
	wantRoutesIn(t, ns, static, foreign...)

	if err := r.Apply(ctx, nil); err != nil {
		t.Fatalf("Apply empty plan: %v", err)
	}
	wantRoutesIn(t, ns, RouteProtocol)
	wantRoutesIn(t, ns, static, foreign...)
}

func TestRoutesApplyReportsBadRoutes(t *testing.T) {
	ns, r := newRoutesNetns(t)
	b := route("10.244.1.0/24", "10.99.0.2", "b")
	unreachable := route("10.244.3.0/24", "192.0.2.3", "far") // not on v0's subnet
	mixed := route("10.244.4.0/24", "10.99.0.4", "mixed")
	mixed.Gw = route("fd00::/64", "fd99::4", "").Gw
	dup := route("10.244.1.0/24", "10.99.0.9", "dup")
	err := r.Apply(context.Background(), []NodeRoute{b, unreachable, mixed, dup, {Node: "empty"}})
	for _, want := range []string{"not on a directly connected network", "different IP families", "a second route to 10.244.1.0/24", "required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply = %v; want an error with %q", err, want)
		}
	}
	wantRoutesIn(t, ns, RouteProtocol, "10.244.1.0/24 via 10.99.0.2")
}

func TestRoutesApplyCanceled(t *testing.T) {
	ns, r := newRoutesNetns(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Apply(ctx, []NodeRoute{route("10.244.1.0/24", "10.99.0.2", "b")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a canceled context = %v; want context.Canceled", err)
	}
	wantRoutesIn(t, ns, RouteProtocol)
	// The socket is still usable afterwards.
	if err := r.Apply(context.Background(), []NodeRoute{route("10.244.1.0/24", "10.99.0.2", "b")}); err != nil {
		t.Fatalf("Apply after a canceled one: %v", err)
	}
	wantRoutesIn(t, ns, RouteProtocol, "10.244.1.0/24 via 10.99.0.2")

	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Apply(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Apply after Close = %v; want an error", err)
	}
}

func TestRoutesOwnProtocolAndTable(t *testing.T) {
	ns, _ := newRoutesNetns(t)
	other, err := NewRoutes(RoutesConfig{NetNS: ns, Protocol: 79, Table: 1000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Apply(context.Background(), []NodeRoute{route("10.244.1.0/24", "10.99.0.2", "b")}); err != nil {
		t.Fatal(err)
	}
	if out := ip(t, ns, "route", "show", "table", "1000", "proto", "79"); !strings.Contains(out, "10.244.1.0/24 via 10.99.0.2") {
		t.Errorf("table 1000 protocol 79 = %q; want the route", out)
	}
	wantRoutesIn(t, ns, RouteProtocol) // main table, our default protocol: untouched

	for _, p := range []uint8{1, 2, 3, 4} {
		if _, err := NewRoutes(RoutesConfig{Protocol: p}); err == nil {
			t.Errorf("NewRoutes with protocol %d: want an error", p)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// NewRoutes opens no socket: a Routes built and never used (the agent
// failing before it starts kubenet) leaks nothing. The namespace is
// entered at the first operation, which reports what went wrong.
func TestNewRoutesOpensNothing(t *testing.T) {
	f, err := os.Open(t.TempDir()) // a descriptor, but no network namespace
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewRoutes(RoutesConfig{NetNS: int(f.Fd()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewRoutes: %v; want no error before the first operation", err)
	}
	if r.conn != nil {
		t.Error("NewRoutes opened a netlink socket")
	}
	if err := r.Apply(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "setns") {
		t.Errorf("Apply in no namespace = %v; want the setns error", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
