package criconfig

import v1 "k8s.io/api/core/v1"

// Node holds the facts about the node that the translation combines with
// a pod's spec.
type Node struct {
	Name string // spec.nodeName for the downward API
	IP   string // status.hostIP for the downward API
	// Allocatable fills resourceFieldRef limits a container does not set,
	// and its memory is what OOM score adjustments are relative to.
	Allocatable v1.ResourceList
	DNS         DNS
	PodLogsDir  string // the kubelet's /var/log/pods
	CgroupRoot  string // "" lets the runtime pick cgroups
	// FlatCgroups is cgroupsPerQOS off: every sandbox's cgroup parent is
	// CgroupRoot itself, with no QoS or pod cgroups (as the kubelet).
	FlatCgroups bool
	// SeccompProfileRoot holds Localhost seccomp profiles (the kubelet's
	// <root-dir>/seccomp); SeccompDefault makes RuntimeDefault the profile
	// of containers that set none (KubeletConfiguration seccompDefault).
	SeccompProfileRoot string
	SeccompDefault     bool
}

// DNS are the node's DNS facts the kubelet combines with a pod's
// dnsPolicy.
type DNS struct {
	ResolvConf    string   // host resolv.conf, "" for none
	ClusterDNS    []string // cluster DNS servers; empty: ClusterFirst falls back to Default
	ClusterDomain string
}

// ConfigError is a container configuration problem the user must fix
// (CreateContainerConfigError), as opposed to a runtime failure.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func isOptional(p *bool) bool { return p != nil && *p }

// PodIPs are a pod's addresses, as its status and its downward API show
// them: a hostNetwork pod's are the node's (the kubelet gives such a pod
// the node's IPs whatever its sandbox reports), any other pod's are its
// sandbox's.
func PodIPs(pod *v1.Pod, nodeIP string, sandboxIPs []string) []string {
	if pod.Spec.HostNetwork && nodeIP != "" {
		return []string{nodeIP}
	}
	return sandboxIPs
}
