package netutil

import "net"

// HostIP is the first global unicast IPv4 address of this host: the node
// IP an agent reports when none is configured, and the address pods reach
// the host at. Empty when there is none.
func HostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String()
		}
	}
	return ""
}
