package network

import (
	"context"
	"fmt"
	"net"

	"sigs.k8s.io/knftables"
)

// MasqueradeTable is the nftables table (family ip) kubenet owns.
const MasqueradeTable = "nodeagent-kubenet"

// Masquerade keeps pod traffic leaving the cluster NATed to the node's
// address and pod-to-pod traffic untouched, as the kubelet's kubenet did
// with its non-masquerade CIDR: the bridge plugin's own ipMasq would hide
// every pod behind its node, also from pods on other nodes, which the
// Kubernetes network model forbids.
type Masquerade struct {
	nft knftables.Interface
}

// NewMasquerade uses the nft binary (Debian's nftables package).
func NewMasquerade() (*Masquerade, error) {
	nft, err := knftables.New(knftables.IPv4Family, MasqueradeTable)
	if err != nil {
		return nil, fmt.Errorf("nftables (needs the nft binary): %w", err)
	}
	return &Masquerade{nft: nft}, nil
}

// MasqueradePlan is the node's own pod CIDRs and every node's (the
// destinations left alone), IPv4 only.
func MasqueradePlan(own []string, all []NodeRoute) (src, dst []string) {
	for _, c := range own {
		if _, n, err := net.ParseCIDR(c); err == nil && n.IP.To4() != nil {
			src = append(src, n.String())
			dst = append(dst, n.String())
		}
	}
	for _, r := range all {
		if r.Dst.IP.To4() != nil {
			dst = append(dst, r.Dst.String())
		}
	}
	return src, dst
}

// Apply rewrites the table in one transaction.
func (m *Masquerade) Apply(ctx context.Context, src, dst []string) error {
	return m.nft.Run(ctx, masqueradeTx(m.nft.NewTransaction(), src, dst))
}

func masqueradeTx(tx *knftables.Transaction, src, dst []string) *knftables.Transaction {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("nodeagent kubenet: masquerade of pod traffic leaving the cluster")})
	tx.Add(&knftables.Set{Name: "pod-cidrs", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
	tx.Flush(&knftables.Set{Name: "pod-cidrs"})
	for _, c := range dst {
		tx.Add(&knftables.Element{Set: "pod-cidrs", Key: []string{c}})
	}
	chain := &knftables.Chain{Name: "postrouting", Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority)}
	tx.Add(chain)
	tx.Flush(chain)
	for _, c := range src {
		tx.Add(&knftables.Rule{Chain: "postrouting", Rule: knftables.Concat("ip saddr", c, "ip daddr != @pod-cidrs", "fib daddr type != local", "masquerade")})
	}
	return tx
}
