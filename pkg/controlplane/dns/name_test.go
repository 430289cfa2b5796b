package dns

import (
	"net"
	"testing"
)

func TestParseName(t *testing.T) {
	const zone = "cluster.local."
	for _, tc := range []struct {
		name string
		want request
		ok   bool
	}{
		{"cluster.local.", request{}, true},
		{"svc.cluster.local.", request{kind: "svc"}, true},
		{"ns.svc.cluster.local.", request{kind: "svc", namespace: "ns"}, true},
		{"Web.NS.svc.cluster.local.", request{kind: "svc", namespace: "ns", name: "web"}, true},
		{"db-0.db.ns.svc.cluster.local.", request{kind: "svc", namespace: "ns", name: "db", endpoint: "db-0"}, true},
		{"_http._tcp.web.ns.svc.cluster.local.", request{kind: "svc", namespace: "ns", name: "web", port: "http", protocol: "tcp"}, true},
		{"1-2-3-4.ns.pod.cluster.local.", request{kind: "pod", namespace: "ns", name: "1-2-3-4"}, true},
		{"a.b.c.web.ns.svc.cluster.local.", request{}, false},
		{"web.ns.other.cluster.local.", request{}, false},
	} {
		got, ok := parseName(tc.name, zone)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDashedIPs(t *testing.T) {
	for ip, label := range map[string]string{"10.244.0.5": "10-244-0-5", "fd00::5": "fd00--5", "2001:db8:0:1::2": "2001-db8-0-1--2"} {
		if got := dashed(ip); got != label {
			t.Errorf("dashed(%s) = %s, want %s", ip, got, label)
		}
		if got := undash(label); !net.ParseIP(got).Equal(net.ParseIP(ip)) {
			t.Errorf("undash(%s) = %s, want %s", label, got, ip)
		}
	}
}

func TestReverseIP(t *testing.T) {
	for name, want := range map[string]string{
		"1.0.96.10.in-addr.arpa.": "10.96.0.1",
		"1.0.96.10.IN-ADDR.ARPA":  "10.96.0.1",
		"0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.": "fd00::10",
		"0.96.10.in-addr.arpa.":     "",
		"300.0.96.10.in-addr.arpa.": "",
		"example.org.":              "",
	} {
		got := reverseIP(name)
		if (want == "" && got != nil) || (want != "" && !got.Equal(net.ParseIP(want))) {
			t.Errorf("reverseIP(%q) = %v, want %q", name, got, want)
		}
	}
}
