package network

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestClusterDNSRefusesOutsiders asks the cluster DNS from the host's own
// address on the node network, which is no pod, service or node address:
// it gets the cluster's names, and REFUSED for names outside the cluster
// (the server is no open resolver).
func TestClusterDNSRefusesOutsiders(t *testing.T) {
	server := net.JoinHostPort(framework.NodeGatewayIP, "53")
	local := &net.UDPAddr{IP: net.ParseIP(framework.NodeGatewayIP)}
	c := &dns.Client{Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: local}}
	ask := func(name string) *dns.Msg {
		t.Helper()
		var resp *dns.Msg
		waitFor(t, apiTimeout, "an answer for "+name, func() (bool, error) {
			var err error
			resp, _, err = c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), server)
			return err == nil, err
		})
		return resp
	}
	resp := ask("kubernetes.default.svc.cluster.local.")
	if len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "10.96.0.1" {
		t.Errorf("a cluster name from %s: %v", framework.NodeGatewayIP, resp)
	}
	if resp := ask("example.org."); resp.Rcode != dns.RcodeRefused {
		t.Errorf("an outside name from %s: %s, want REFUSED", framework.NodeGatewayIP, dns.RcodeToString[resp.Rcode])
	}
}
