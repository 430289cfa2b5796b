package dns

import (
	"fmt"
	"net"
	"strconv"

	"github.com/nodeagent/nodeagent/pkg/netutil"
)

// listen binds UDP and TCP on the same port of addr's host; port 0 takes
// the free UDP port the kernel picks for TCP too, trying again with
// another port when that one is taken for TCP.
func listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("address %q: %w", addr, err)
	}
	tries := 1
	if port == "0" {
		tries = 10
	}
	for i := 1; ; i++ {
		pc, l, err := listenPair(host, addr)
		if err == nil || i >= tries {
			return pc, l, err
		}
	}
}

func listenPair(host, addr string) (net.PacketConn, net.Listener, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	tcpAddr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", tcpAddr)
	if err != nil {
		_ = pc.Close()
		return nil, nil, fmt.Errorf("listen tcp %s: %w", tcpAddr, err)
	}
	return pc, l, nil
}

// HostIP is the host's address pods reach it at (see netutil.HostIP):
// the nameserver to give them when the server binds all addresses.
func HostIP() string { return netutil.HostIP() }
