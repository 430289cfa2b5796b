package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ClearBridgeAddresses removes from the bridge every address that is not
// the gateway of one of podCIDRs, as the kubelet's kubenet did: a node
// whose pod CIDR changed (deleted and registered again) keeps its bridge,
// and the bridge plugin refuses to work on one that holds the old
// gateway. A missing bridge is fine (no pod started yet). Without a pod
// CIDR it does nothing: it cannot tell a stale gateway from the current
// one, as on a Node registered again before it is given its pod CIDR.
func ClearBridgeAddresses(bridge string, podCIDRs []string) error {
	keep := map[string]bool{}
	for _, c := range podCIDRs {
		if _, n, err := net.ParseCIDR(c); err == nil {
			keep[gateway(n).String()] = true
		}
	}
	if len(keep) == 0 {
		return nil
	}
	ifi, err := net.InterfaceByName(bridge)
	if err != nil {
		return nil // not created yet
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", bridge, err)
	}
	var stale []*net.IPNet
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !keep[n.IP.String()] && !n.IP.IsLinkLocalUnicast() {
			stale = append(stale, n)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	conn, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return fmt.Errorf("open route netlink socket: %w", err)
	}
	defer conn.Close()
	var errs []error
	for _, n := range stale {
		if _, err := conn.Execute(delAddrMessage(ifi.Index, n)); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			errs = append(errs, fmt.Errorf("delete %s from %s: %w", n, bridge, err))
		}
	}
	return errors.Join(errs...)
}

// gateway is the first address of n, the bridge plugin's default gateway.
func gateway(n *net.IPNet) net.IP {
	ip := append(net.IP(nil), n.IP...)
	ip[len(ip)-1]++
	return ip
}

// delAddrMessage is RTM_DELADDR for n on the link: struct ifaddrmsg then
// IFA_LOCAL and IFA_ADDRESS.
func delAddrMessage(index int, n *net.IPNet) netlink.Message {
	family, ip := uint8(unix.AF_INET), n.IP.To4()
	if ip == nil {
		family, ip = unix.AF_INET6, n.IP.To16()
	}
	ones, _ := n.Mask.Size()
	hdr := make([]byte, 8)
	hdr[0], hdr[1] = family, uint8(ones)
	binary.NativeEndian.PutUint32(hdr[4:], uint32(index))
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(unix.IFA_LOCAL, ip)
	ae.Bytes(unix.IFA_ADDRESS, ip)
	attrs, _ := ae.Encode()
	return netlink.Message{
		Header: netlink.Header{Type: unix.RTM_DELADDR, Flags: netlink.Request | netlink.Acknowledge},
		Data:   append(hdr, attrs...),
	}
}
