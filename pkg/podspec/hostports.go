package podspec

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// HostPort is one port a pod takes on its node's addresses; the scheduler
// and the agent's admission both check them for conflicts.
type HostPort struct {
	IP       string // "0.0.0.0" for all addresses
	Protocol v1.Protocol
	Port     int32
}

// Conflicts is upstream's nodeports rule: same port and protocol, and
// either side binds all addresses or both bind the same one.
func (p HostPort) Conflicts(o HostPort) bool {
	if p.Port != o.Port || p.Protocol != o.Protocol {
		return false
	}
	return p.IP == o.IP || p.IP == "0.0.0.0" || o.IP == "0.0.0.0"
}

// HostPorts lists the host ports of a pod's app containers and sidecars
// (restartable init containers); ordinary init containers end before the
// pod runs, so theirs do not count.
func HostPorts(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(cs []v1.Container, sidecarsOnly bool) {
		for _, c := range cs {
			if sidecarsOnly && !podutil.IsSidecar(&c) {
				continue
			}
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" || hp.IP == "::" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = v1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}
