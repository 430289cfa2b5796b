// Package nodeipam is the node IPAM controller: it gives every Node a pod
// CIDR (spec.podCIDR and spec.podCIDRs) carved out of the cluster CIDR, as
// kube-controller-manager's range allocator with --allocate-node-cidrs
// (pkg/controller/nodeipam/ipam). CIDRs already on nodes are marked used at
// start, nodes without one get the next free block through a patch of
// their spec, and a deleted Node's block is released. When the range is
// exhausted the Node gets a CIDRNotAvailable event and is retried later.
//
// The allocation itself is the pure CIDRSet (a bitmap over the blocks of
// the cluster CIDR):
//
//	set, err := nodeipam.NewCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 24)
//	block, err := set.AllocateNext() // 10.244.0.0/24, then 10.244.1.0/24, ...
//
// The controller:
//
//	c, err := nodeipam.New(client, factory, nodeipam.Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 24}, log)
//	factory.Start(ctx.Done())
//	err = c.Run(ctx)
package nodeipam
