// Package dns is the cluster DNS server of `nodeagent server`: a small
// authoritative server for the cluster domain that implements the
// Kubernetes DNS-Based Service Discovery specification
// (github.com/kubernetes/dns docs/specification.md) the way CoreDNS's
// kubernetes plugin does, and forwards every other name to the host's
// resolvers.
//
// In the cluster zone (default cluster.local) it answers, from informer
// caches:
//
//	<svc>.<ns>.svc.<zone>                A/AAAA: the ClusterIPs; headless: the ready endpoint IPs
//	<host>.<svc>.<ns>.svc.<zone>         A/AAAA: the endpoints whose hostname (or dashed IP) is <host>
//	_<port>._<proto>.<svc>.<ns>.svc.<zone> SRV
//	<a-b-c-d>.<ns>.pod.<zone>            A/AAAA (CoreDNS's "pods insecure" mode)
//	<svc>.<ns>.svc.<zone> of an ExternalName service: CNAME, chased for A/AAAA
//	dns-version.<zone>                   TXT: the schema version
//
// Missing names get NXDOMAIN and existing names without data NODATA, both
// with the zone's SOA. PTR queries for service and endpoint IPs are
// answered; other reverse names and all names outside the zone go to the
// upstream resolvers over UDP, retried over TCP when truncated.
//
// It is no open resolver: names outside the zone are forwarded only for
// loopback, Config.RecursionCIDRs (the pod and service CIDRs) and node
// addresses (NewInformerNodes); other clients get REFUSED for them, as
// from CoreDNS's acl plugin. UDP answers are capped at 1232 bytes whatever
// EDNS0 buffer the client asks for (truncated beyond: TC), and a client
// over Config.RateLimit answers a second gets empty truncated answers, so
// that it retries over TCP.
//
// Use:
//
//	svcs, err := dns.NewInformerServices(factory)
//	eps, err := dns.NewInformerEndpoints(factory)
//	nodes, err := dns.NewInformerNodes(factory)
//	srv, err := dns.New(dns.Config{Address: hostIP + ":53", Services: svcs, Endpoints: eps,
//		RecursionCIDRs: []netip.Prefix{podCIDR, serviceCIDR}, Nodes: nodes})
//	factory.Start(ctx.Done())
//	err = srv.Listen()   // binds UDP and TCP on one port
//	err = srv.Serve(ctx) // until ctx ends
package dns
