package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
)

// CNISpecVersion is the CNI spec version of the conflists we render: the
// newest that the reference plugins of Debian 12 (1.1.1) support.
const CNISpecVersion = "1.0.0"

// DefaultBridge is the bridge device when CNIConfig.Bridge is empty (the
// name kubenet and most bridge set-ups use).
const DefaultBridge = "cni0"

// CNIConfig is what the node's conflist is rendered from.
type CNIConfig struct {
	// NetworkName is the conflist's "name" (required). host-local keys its
	// store by it, so changing it forgets the allocated addresses.
	NetworkName string
	// Bridge is the host bridge device. Default: DefaultBridge.
	Bridge string
	// PodCIDRs are the node's spec.podCIDRs: one or two, at most one per IP
	// family; the first one is the primary family.
	PodCIDRs []string
	// MTU of the bridge and the pods' interfaces; 0 keeps the plugin's
	// default (the kernel's, 1500).
	MTU int
	// HairpinMode lets a pod reach itself through a Service address.
	HairpinMode bool
	// IPMasq masquerades pod traffic leaving the pod CIDRs.
	IPMasq bool
	// DataDir is host-local's store of allocated addresses; empty keeps the
	// plugin's default (/var/lib/cni/networks).
	DataDir string
	// Loopback appends the loopback plugin to the chain, for runtimes that
	// do not bring up the pod's lo themselves (containerd and CRI-O do).
	Loopback bool
}

// The conflist as JSON. Structs, not maps, so that the output is stable
// and WriteAtomic can tell "unchanged" by comparing bytes.
type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgePlugin struct {
	Type        string        `json:"type"`
	Bridge      string        `json:"bridge"`
	IsGateway   bool          `json:"isGateway"`
	IPMasq      bool          `json:"ipMasq"`
	HairpinMode bool          `json:"hairpinMode"`
	MTU         int           `json:"mtu,omitempty"`
	IPAM        hostLocalIPAM `json:"ipam"`
}

type hostLocalIPAM struct {
	Type    string        `json:"type"`
	Ranges  [][]ipamRange `json:"ranges"`
	Routes  []ipamRoute   `json:"routes"`
	DataDir string        `json:"dataDir,omitempty"`
}

type ipamRange struct {
	Subnet string `json:"subnet"`
}

type ipamRoute struct {
	Dst string `json:"dst"`
}

type portmapPlugin struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         bool            `json:"snat"`
}

type loopbackPlugin struct {
	Type string `json:"type"`
}

// RenderConflist renders c as a CNI conflist: bridge (gateway on the
// bridge, host-local IPAM with one range set and one default route per pod
// CIDR) followed by portmap for hostPort. It rejects input the plugins
// would reject later, or worse, accept and misbehave with.
func RenderConflist(c CNIConfig) ([]byte, error) {
	if err := checkNetworkName(c.NetworkName); err != nil {
		return nil, err
	}
	bridge := c.Bridge
	if bridge == "" {
		bridge = DefaultBridge
	}
	if err := checkDeviceName(bridge); err != nil {
		return nil, err
	}
	cidrs, err := ParsePodCIDRs(c.PodCIDRs)
	if err != nil {
		return nil, err
	}
	if err := checkMTU(c.MTU, cidrs); err != nil {
		return nil, err
	}
	ipam := hostLocalIPAM{Type: "host-local", DataDir: c.DataDir}
	for _, n := range cidrs {
		ipam.Ranges = append(ipam.Ranges, []ipamRange{{Subnet: n.String()}})
		ipam.Routes = append(ipam.Routes, ipamRoute{Dst: defaultRoute(n)})
	}
	plugins := []any{
		bridgePlugin{Type: "bridge", Bridge: bridge, IsGateway: true, IPMasq: c.IPMasq,
			HairpinMode: c.HairpinMode, MTU: c.MTU, IPAM: ipam},
		portmapPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
	}
	if c.Loopback {
		// Last, because loopback passes the previous result through.
		plugins = append(plugins, loopbackPlugin{Type: "loopback"})
	}
	out, err := json.MarshalIndent(conflist{CNIVersion: CNISpecVersion, Name: c.NetworkName, Plugins: plugins}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render CNI config %q: %w", c.NetworkName, err)
	}
	return append(out, '\n'), nil
}

// ParsePodCIDRs parses a node's spec.podCIDRs: one or two network
// addresses, at most one per IP family, each with room for a gateway and
// at least one pod.
func ParsePodCIDRs(cidrs []string) ([]*net.IPNet, error) {
	if len(cidrs) == 0 {
		return nil, errors.New("no pod CIDRs")
	}
	var out []*net.IPNet
	seen := map[bool]string{} // is IPv4 → CIDR
	for _, s := range cidrs {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("pod CIDR %q: %w", s, err)
		}
		if !ip.Equal(n.IP) {
			return nil, fmt.Errorf("pod CIDR %q is not a network address (did you mean %s?)", s, n)
		}
		v4 := n.IP.To4() != nil
		if prev, dup := seen[v4]; dup {
			return nil, fmt.Errorf("pod CIDRs %q and %q: at most one CIDR per IP family", prev, s)
		}
		seen[v4] = s
		if ones, bits := n.Mask.Size(); bits-ones < 2 {
			return nil, fmt.Errorf("pod CIDR %q is too small for a gateway and a pod", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func defaultRoute(n *net.IPNet) string {
	if n.IP.To4() != nil {
		return "0.0.0.0/0"
	}
	return "::/0"
}

// The CNI spec's rule for network names.
var networkNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

func checkNetworkName(name string) error {
	if name == "" {
		return errors.New("CNI network name is empty")
	}
	if !networkNameRE.MatchString(name) {
		return fmt.Errorf("CNI network name %q: must start with a letter or digit and contain only letters, digits, '_', '.' and '-'", name)
	}
	return nil
}

// checkDeviceName applies the kernel's rule (dev_valid_name).
func checkDeviceName(name string) error {
	if len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n") {
		return fmt.Errorf("bridge name %q is not a valid device name (at most 15 characters, no '/', ':' or spaces)", name)
	}
	return nil
}

func checkMTU(mtu int, cidrs []*net.IPNet) error {
	minMTU := 68 // IPv4's minimum
	for _, n := range cidrs {
		if n.IP.To4() == nil {
			minMTU = 1280 // IPv6's
		}
	}
	if mtu != 0 && (mtu < minMTU || mtu > 65535) {
		return fmt.Errorf("MTU %d is out of range %d-65535 for these pod CIDRs", mtu, minMTU)
	}
	return nil
}
