// Package network gives a node its pod network: the CNI configuration for
// the node's pod CIDRs and host-gw routes to the other nodes' pod CIDRs.
//
// Planning is pure and tested without side effects: RenderConflist turns the
// node's spec.podCIDRs into a bridge + host-local + portmap conflist, and
// PlanRoutes / DiffRoutes turn the Node list into the routes wanted and the
// changes to make. PlanRoutes believes another node's pod CIDR only within
// bounds (RoutePolicy: inside the cluster CIDR, a sane prefix, no node's
// address, no overlap with an earlier claim), so that a node cannot route
// others' traffic to itself by claiming a CIDR; it returns what it refused.
//
// Appliers are thin: ConfigWriter renders, validates the plugins with
// libcni (Validate) and writes the file atomically (WriteAtomic),
// remembering the outcome for the NetworkUnavailable node condition;
// Routes applies a route plan over rtnetlink, touching only routes marked
// with its own route protocol (RouteProtocol).
//
// Use:
//
//	w, err := network.NewConfigWriter(network.ConfigWriterConfig{Dir: "/etc/cni/net.d", BinDirs: []string{"/usr/lib/cni"}, CNI: network.CNIConfig{NetworkName: "nodeagent", IPMasq: true, HairpinMode: true}})
//	changed, err := w.Sync(ctx, node.Spec.PodCIDRs)
//	ready, reason, message := w.Status()
//
//	r, err := network.NewRoutes(network.RoutesConfig{}) // the socket opens at the first Apply
//	defer r.Close()
//	plan, refused := network.PlanRoutes(nodeName, nodes, network.RoutePolicy{ClusterCIDRs: clusterCIDRs})
//	err = r.Apply(ctx, plan)
//
// Kubenet puts these together for the agent: Run watches the Nodes and
// syncs; Condition is the NetworkUnavailable node condition once the first
// sync is done.
package network
