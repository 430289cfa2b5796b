package criconfig

import (
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Limits from the kubelet (and glibc).
const (
	maxDNSNameservers = 3
	maxDNSSearches    = 32
)

type sandboxInputs struct {
	Attempt    uint32
	LogDir     string
	CgroupRoot string // "" disables per-pod cgroup parents
	DNS        *criv1.DNSConfig
}

// SandboxConfig is the pod's RunPodSandbox request for the given attempt,
// with the kubelet's labels and annotations (crictl shows them) and the
// sandbox hash the planner compares to decide on a new sandbox.
func SandboxConfig(pod *v1.Pod, node Node, attempt uint32) (*criv1.PodSandboxConfig, error) {
	dns, err := dnsConfig(pod, node.DNS)
	if err != nil {
		return nil, err
	}
	cfg := buildSandboxConfig(pod, sandboxInputs{
		Attempt:    attempt,
		LogDir:     runtime.PodLogsDir(node.PodLogsDir, pod.Namespace, pod.Name, pod.UID),
		CgroupRoot: node.CgroupRoot,
		DNS:        dns,
	})
	if !pod.Spec.HostNetwork {
		if cfg.Hostname, err = KernelHostname(pod, node.DNS.ClusterDomain); err != nil {
			return nil, err
		}
	}
	cfg.Annotations[runtime.AnnotationSandboxHash] = runtime.HashSandbox(pod)
	if node.FlatCgroups && node.CgroupRoot != "" {
		cfg.Linux.CgroupParent = path.Clean(node.CgroupRoot)
	}
	return cfg, nil
}

func buildSandboxConfig(pod *v1.Pod, in sandboxInputs) *criv1.PodSandboxConfig {
	cfg := &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: in.Attempt,
		},
		LogDirectory: in.LogDir,
		DnsConfig:    in.DNS,
		PortMappings: portMappings(pod),
		Labels:       runtime.SandboxLabels(pod),
		Annotations:  runtime.SandboxAnnotations(pod),
		Linux: &criv1.LinuxPodSandboxConfig{
			SecurityContext: sandboxSecurity(pod),
			Sysctls:         sysctls(pod),
		},
	}
	if !pod.Spec.HostNetwork {
		cfg.Hostname = Hostname(pod)
	}
	if in.CgroupRoot != "" {
		cfg.Linux.CgroupParent = podCgroupParent(in.CgroupRoot, pod)
	}
	return cfg
}

func podCgroupParent(root string, pod *v1.Pod) string {
	return PodCgroupParent(root, QOSClass(pod), pod.UID)
}

// PodCgroupParent mirrors the kubelet's cgroupfs layout:
// <root>/kubepods[/burstable|/besteffort]/pod<uid>.
func PodCgroupParent(root string, qos v1.PodQOSClass, uid types.UID) string {
	base := strings.TrimRight(root, "/") + "/kubepods"
	switch qos {
	case v1.PodQOSBurstable:
		base += "/burstable"
	case v1.PodQOSBestEffort:
		base += "/besteffort"
	}
	return base + "/pod" + string(uid)
}

func portMappings(pod *v1.Pod) []*criv1.PortMapping {
	var out []*criv1.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			out = append(out, &criv1.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func protocol(p v1.Protocol) criv1.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return criv1.Protocol_UDP
	case v1.ProtocolSCTP:
		return criv1.Protocol_SCTP
	}
	return criv1.Protocol_TCP
}

// WithUserNamespace puts the pod's allocated user namespace (mode POD
// with its mappings) into the sandbox's namespace options.
func WithUserNamespace(cfg *criv1.PodSandboxConfig, u *criv1.UserNamespace) {
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = u
}

func sandboxSecurity(pod *v1.Pod) *criv1.LinuxSandboxSecurityContext {
	sc := &criv1.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod), Seccomp: sandboxSeccomp()}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &criv1.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &criv1.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = psc.SupplementalGroups
		sc.SupplementalGroupsPolicy = SupplementalGroupsPolicy(psc)
		sc.SelinuxOptions = selinuxOption(psc.SELinuxOptions)
	}
	for _, c := range podutil.AllContainers(pod) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	return sc
}

func sysctls(pod *v1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		// The kubelet turns '/' separators into '.' before the sandbox is
		// created (ConvertPodSysctlsVariableToDotsSeparator): runc wants dots.
		out[utilsysctl.NormalizeName(s.Name)] = s.Value
	}
	return out
}
