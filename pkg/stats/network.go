package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// defaultInterface is the interface the kubelet reports at the top of
// NetworkStats.
const defaultInterface = "eth0"

// ignoredInterfaces are prefixes cAdvisor leaves out of the node's
// network stats: loopback and the host ends of container links.
var ignoredInterfaces = []string{"lo", "veth", "docker", "nerdctl"}

// network reads the node's interfaces from /proc/net/dev. The default
// interface is eth0 as upstream's, or, on hosts that name it otherwise,
// the first interface listed.
func (h Host) network() (*NetworkStats, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "net", "dev"))
	if err != nil {
		return nil, fmt.Errorf("node network: %w", err)
	}
	ifaces, err := parseNetDev(string(b))
	if err != nil {
		return nil, err
	}
	n := &NetworkStats{Interfaces: ifaces}
	for _, i := range ifaces {
		if i.Name == defaultInterface {
			n.InterfaceStats = i
		}
	}
	if n.Name == "" && len(ifaces) > 0 {
		n.InterfaceStats = ifaces[0]
	}
	return n, nil
}

// parseNetDev parses /proc/net/dev: after "name:", the receive columns
// bytes packets errs ... then the transmit ones.
func parseNetDev(s string) ([]InterfaceStats, error) {
	var out []InterfaceStats
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || ignored(name) {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 11 {
			continue // the two header lines
		}
		var v [4]uint64
		for i, col := range []int{0, 2, 8, 10} { // rx bytes, rx errs, tx bytes, tx errs
			n, err := strconv.ParseUint(f[col], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/net/dev %s: %w", name, err)
			}
			v[i] = n
		}
		out = append(out, InterfaceStats{Name: name, RxBytes: ptr(v[0]), RxErrors: ptr(v[1]), TxBytes: ptr(v[2]), TxErrors: ptr(v[3])})
	}
	return out, nil
}

func ignored(name string) bool {
	for _, p := range ignoredInterfaces {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
