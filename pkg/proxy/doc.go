// Package proxy is the node's service proxy, as kube-proxy in nftables
// mode (pkg/proxy/nftables): it makes the cluster IPs and NodePorts of
// Services reach their endpoints, with one nft table it owns entirely,
// "ip nodeagent-proxy", written through sigs.k8s.io/knftables (which
// runs the nft binary, Debian package nftables).
//
// IPv4 only for now: IPv4 cluster IPs and IPv4 EndpointSlices. Headless
// and ExternalName services are skipped, and so are services labelled
// service.kubernetes.io/service-proxy-name (another proxy's).
//
// The work is split in three:
//
//   - BuildServicePorts (pure) computes the desired state per service
//     port: cluster IP, port and protocol, the NodePort of NodePort and
//     LoadBalancer services, ClientIP session affinity with its timeout,
//     and the endpoints: the ready ones (ready unset counts as ready) or,
//     when none is, the serving terminating ones. Slice ports are matched
//     to service ports by name and protocol, so named target ports come
//     resolved. Everything is sorted.
//   - The renderer turns that into nft objects, with kube-proxy's shape:
//     base chains for nat prerouting/output (DNAT) and postrouting
//     (masquerade of marked packets), filter chains that reject new
//     connections to services without endpoints (maps no-endpoint-services
//     and no-endpoint-nodeports), the verdict maps service-ips
//     (daddr . proto . dport) and service-nodeports (proto . dport, for
//     local non-loopback destinations), a chain per service port that
//     first honours affinity and then picks an endpoint with "numgen
//     random mod N vmap", a chain per endpoint that marks hairpin traffic
//     for masquerade and DNATs, and per-endpoint affinity sets of client
//     addresses with the affinity timeout. Traffic to a cluster IP from
//     outside Config.ClusterCIDR is masqueraded (all of it when the CIDR
//     is empty), and so is all NodePort traffic (externalTrafficPolicy
//     Cluster). Names are derived deterministically from the service
//     port and endpoint ("service-<hash>-<ns>/<name>/<proto>/<port>"),
//     truncated to nft's limit.
//   - The Proxier applies it in one transaction per sync. It remembers
//     what it wrote and rewrites only the chains, sets and map elements of
//     service ports that changed; it rewrites the whole table (and removes
//     whatever else is in it) on its first sync, after a failed one and
//     every FullSyncPeriod.
//   - Chains no longer wanted (of removed services and endpoints, or
//     unknown ones a full sync finds) are emptied in the transaction that
//     drops the map elements and rules pointing to them, and deleted, in
//     a transaction of their own, by a sync at least a second later (Run
//     syncs then even if nothing changed), as kube-proxy does: Linux
//     before 6.2 (Debian 12 ships 6.1) releases the chain references of
//     deleted map elements only after the transaction, so deleting both
//     in one transaction fails with EBUSY. A failed deletion is retried
//     with backoff and fails no sync. Full syncs do not delete the table
//     (that would be safe: a table deletion removes its objects
//     recursively without checking references, but it would also empty
//     the affinity sets); they flush the maps and chains in place.
//   - After the rules, conntrack entries of UDP and SCTP flows that no
//     longer go where the rules send them are deleted over ctnetlink
//     (Config.Conntrack): when a service port lost an endpoint, the
//     flows to its cluster IP and NodePort not DNATed to a remaining
//     endpoint; when it gains its first endpoints or a new address, the
//     flows sent to it before; in full syncs, every such flow (after a
//     restart, endpoints that went meanwhile). Otherwise a client that
//     keeps sending (a resolver) would keep its flow to a dead endpoint.
//
// Use:
//
//	p, err := proxy.New(proxy.Config{ClusterCIDR: "10.244.0.0/16", Informers: factory})
//	...
//	factory.Start(ctx.Done())
//	err = p.Run(ctx) // syncs on changes, at most once per MinSyncPeriod
//
// Sync applies a given set of objects directly (tests, benchmarks);
// Config.OnSync and Stats report every sync for metrics and for
// measuring how long a change takes to reach the kernel. Config.Metrics
// records kube-proxy's metrics (NewMetrics, then Register them where
// /metrics is served): kubeproxy_sync_proxy_rules_duration_seconds, its
// full and partial variants, kubeproxy_sync_proxy_rules_last_timestamp_seconds,
// the nftables sync and cleanup failure counters, and
// kubeproxy_network_programming_duration_seconds, from the
// endpoints.kubernetes.io/last-change-trigger-time of the EndpointSlice
// changes Run applies to the end of the sync that applied them. Not done:
// externalIPs, LoadBalancer ingress IPs and source ranges,
// internal/externalTrafficPolicy Local and topology, IPv6.
package proxy
