package dns

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// rrs renders records one per string, fields separated by single spaces,
// sorted.
func rrs(records []dns.RR) []string {
	out := make([]string, 0, len(records))
	for _, rr := range records {
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

const soa = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local."

func TestZoneAnswers(t *testing.T) {
	up := startUpstream(t, answerA(1, false), answerA(1, false))
	addr := startServer(t, Config{Upstreams: []string{up.addr}}, clusterObjects()...)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string // the Answer section
		extra []string // the Additional section, when checked
	}{
		{name: "kubernetes.default.svc.cluster.local", qtype: dns.TypeA,
			want: []string{"kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"}},
		{name: "web.default.svc.cluster.local", qtype: dns.TypeA,
			want: []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}},
		{name: "web.default.svc.cluster.local", qtype: dns.TypeAAAA,
			want: []string{"web.default.svc.cluster.local. 5 IN AAAA fd00::10"}},
		{name: "kubernetes.default.svc.cluster.local", qtype: dns.TypeAAAA}, // NODATA
		{name: "kubernetes.default.svc.cluster.local", qtype: dns.TypeMX},   // NODATA
		// Matching ignores case; answers keep the question's.
		{name: "Web.DEFAULT.svc.Cluster.Local", qtype: dns.TypeA,
			want: []string{"Web.DEFAULT.svc.Cluster.Local. 5 IN A 10.96.0.10"}},
		{name: "db.default.svc.cluster.local", qtype: dns.TypeA, want: []string{
			"db.default.svc.cluster.local. 5 IN A 10.244.0.5",
			"db.default.svc.cluster.local. 5 IN A 10.244.0.6",
		}},
		{name: "db-0.db.default.svc.cluster.local", qtype: dns.TypeA,
			want: []string{"db-0.db.default.svc.cluster.local. 5 IN A 10.244.0.5"}},
		{name: "10-244-0-6.db.default.svc.cluster.local", qtype: dns.TypeA,
			want: []string{"10-244-0-6.db.default.svc.cluster.local. 5 IN A 10.244.0.6"}},
		{name: "db-2.db.default.svc.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError}, // not ready
		{name: "empty.default.svc.cluster.local", qtype: dns.TypeA},                              // headless, no endpoints: NODATA
		{name: "unready.default.svc.cluster.local", qtype: dns.TypeA,
			want: []string{"unready.default.svc.cluster.local. 5 IN A 10.244.0.8"}},
		{name: "_https._tcp.kubernetes.default.svc.cluster.local", qtype: dns.TypeSRV,
			want:  []string{"_https._tcp.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 kubernetes.default.svc.cluster.local."},
			extra: []string{"kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"}},
		{name: "_dns._udp.web.default.svc.cluster.local", qtype: dns.TypeSRV,
			want: []string{"_dns._udp.web.default.svc.cluster.local. 5 IN SRV 0 100 53 web.default.svc.cluster.local."},
			extra: []string{
				"web.default.svc.cluster.local. 5 IN A 10.96.0.10",
				"web.default.svc.cluster.local. 5 IN AAAA fd00::10",
			}},
		{name: "_http._udp.web.default.svc.cluster.local", qtype: dns.TypeSRV, rcode: dns.RcodeNameError},
		{name: "_pg._tcp.db.default.svc.cluster.local", qtype: dns.TypeSRV,
			want: []string{
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 5432 10-244-0-6.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 50 5432 db-0.db.default.svc.cluster.local.",
			},
			extra: []string{
				"10-244-0-6.db.default.svc.cluster.local. 5 IN A 10.244.0.6",
				"db-0.db.default.svc.cluster.local. 5 IN A 10.244.0.5",
			}},
		{name: "10-244-1-5.default.pod.cluster.local", qtype: dns.TypeA,
			want: []string{"10-244-1-5.default.pod.cluster.local. 5 IN A 10.244.1.5"}},
		{name: "fd00--5.other.pod.cluster.local", qtype: dns.TypeAAAA,
			want: []string{"fd00--5.other.pod.cluster.local. 5 IN AAAA fd00::5"}},
		{name: "10-244-1-5.default.pod.cluster.local", qtype: dns.TypeAAAA}, // NODATA
		{name: "10-244-1-5.missing.pod.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "not-an-ip.default.pod.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "ext.default.svc.cluster.local", qtype: dns.TypeCNAME,
			want: []string{"ext.default.svc.cluster.local. 5 IN CNAME example.org."}},
		{name: "ext.default.svc.cluster.local", qtype: dns.TypeA, want: []string{ // chased upstream
			"example.org. 60 IN A 192.0.2.1",
			"ext.default.svc.cluster.local. 5 IN CNAME example.org.",
		}},
		{name: "alias.default.svc.cluster.local", qtype: dns.TypeA, want: []string{ // chased in the zone
			"alias.default.svc.cluster.local. 5 IN CNAME web.default.svc.cluster.local.",
			"web.default.svc.cluster.local. 5 IN A 10.96.0.10",
		}},
		{name: "missing.default.svc.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "web.missing.svc.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "missing.svc.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError}, // search path: namespace "missing"
		{name: "default.svc.cluster.local", qtype: dns.TypeA},                            // NODATA
		{name: "svc.cluster.local", qtype: dns.TypeA},                                    // NODATA
		{name: "a.b.c.web.default.svc.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "web.default.nope.cluster.local", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "dns-version.cluster.local", qtype: dns.TypeTXT,
			want: []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}},
		{name: "cluster.local", qtype: dns.TypeNS,
			want: []string{"cluster.local. 5 IN NS ns.dns.cluster.local."}},
		{name: "1.0.96.10.in-addr.arpa", qtype: dns.TypePTR,
			want: []string{"1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local."}},
		{name: "5.0.244.10.in-addr.arpa", qtype: dns.TypePTR,
			want: []string{"5.0.244.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local."}},
	} {
		t.Run(tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
			resp := query(t, addr, "udp", tc.name, tc.qtype)
			if resp.Rcode != tc.rcode {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
			}
			if got := rrs(resp.Answer); !slices.Equal(got, tc.want) {
				t.Errorf("answer:\n got %q\nwant %q", got, tc.want)
			}
			if tc.extra != nil && !slices.Equal(rrs(resp.Extra), tc.extra) {
				t.Errorf("additional:\n got %q\nwant %q", rrs(resp.Extra), tc.extra)
			}
			if !resp.Authoritative {
				t.Error("answer is not authoritative")
			}
			checkNegative(t, resp)
		})
	}
}

// checkNegative checks that NXDOMAIN and NODATA carry the zone's SOA.
func checkNegative(t *testing.T, resp *dns.Msg) {
	t.Helper()
	if len(resp.Answer) > 0 {
		return
	}
	if len(resp.Ns) != 1 || !strings.HasPrefix(rrs(resp.Ns)[0], soa) {
		t.Fatalf("negative answer without the SOA: %q", rrs(resp.Ns))
	}
	if s := resp.Ns[0].(*dns.SOA); s.Minttl != DefaultTTL || s.Refresh != soaRefresh {
		t.Errorf("SOA timers: %v", s)
	}
}

func TestZoneTCP(t *testing.T) {
	addr := startServer(t, Config{Upstreams: []string{"127.0.0.1:1"}}, clusterObjects()...)
	resp := query(t, addr, "tcp", "kubernetes.default.svc.cluster.local", dns.TypeA)
	if got := rrs(resp.Answer); len(got) != 1 || !strings.HasSuffix(got[0], "A 10.96.0.1") {
		t.Fatalf("answer over TCP: %q", got)
	}
}

func TestCustomDomainAndTTL(t *testing.T) {
	addr := startServer(t, Config{ClusterDomain: "Corp.Example.", TTL: 30, Upstreams: []string{"127.0.0.1:1"}},
		clusterObjects()...)
	resp := query(t, addr, "udp", "web.default.svc.corp.example", dns.TypeA)
	want := []string{"web.default.svc.corp.example. 30 IN A 10.96.0.10"}
	if got := rrs(resp.Answer); !slices.Equal(got, want) {
		t.Fatalf("answer %q, want %q", got, want)
	}
	resp = query(t, addr, "udp", "web.default.svc.cluster.local", dns.TypeA) // now outside the zone
	if resp.Rcode != dns.RcodeServerFailure {
		t.Fatalf("cluster.local with another domain: %s, want forwarded (SERVFAIL: no upstream)", dns.RcodeToString[resp.Rcode])
	}
}
