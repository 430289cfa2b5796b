package sysctl

import (
	"fmt"
	"os"
	"regexp"
	goruntime "runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ForbiddenReason is the reason of a pod rejected for its sysctls.
const ForbiddenReason = "SysctlForbidden"

// safeSysctl is a sysctl every pod may set: namespaced and isolated from
// other pods. minKernel is the kernel version that namespaced it ("": all).
type safeSysctl struct {
	name      string
	minKernel string
}

// safeSysctls is the kubelet v1.37 list (pkg/kubelet/sysctl/safe_sysctls.go)
// with the kernel versions of pkg/util/kernel/constants.go.
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", minKernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", minKernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", minKernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", minKernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", minKernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", minKernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", minKernel: "4.15"},
	{name: "net.ipv4.tcp_slow_start_after_idle", minKernel: "4.15"},
	{name: "net.ipv4.tcp_notsent_lowat", minKernel: "4.6"},
}

// SafeSysctls lists the safe sysctls available on a kernel; with no known
// kernel version (nil) only those without a minimum, as upstream drops the
// others when it cannot read the version.
func SafeSysctls(kernel *version.Version) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.minKernel == "" || (kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.minKernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// osReleasePath holds the running kernel's release, e.g. "6.1.0-18-amd64".
const osReleasePath = "/proc/sys/kernel/osrelease"

// KernelVersion is the running kernel's version.
func KernelVersion() (*version.Version, error) {
	b, err := os.ReadFile(osReleasePath)
	if err != nil {
		return nil, fmt.Errorf("failed to get kernel version: %w", err)
	}
	v, err := version.ParseGeneric(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("failed to parse kernel version: %w", err)
	}
	return v, nil
}

// SafeSysctlAllowlist is the safe set for this node: none off Linux, and
// on Linux those the running kernel namespaces. The error tells why the
// kernel-gated ones were left out (the list is still usable).
func SafeSysctlAllowlist() ([]string, error) {
	if goruntime.GOOS != "linux" {
		return nil, nil
	}
	kernel, err := KernelVersion()
	return SafeSysctls(kernel), err
}

// maxLength is the longest sysctl name or pattern (core validation's SysctlMaxLength).
const maxLength = 253

// patternFmt is policy validation's SysctlContainSlashPatternFmt: segments
// separated by '.' or '/', the last one may end in '*'.
const patternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

var patternRegexp = regexp.MustCompile("^" + patternFmt + "$")

// ValidatePattern checks one allowedUnsafeSysctls entry as the kubelet's
// NewAllowlist does: a name or a prefix ending in '*' that the kernel is
// known to namespace. Errors carry upstream's messages.
func ValidatePattern(p string) error {
	_, _, _, err := parsePattern(p)
	return err
}

func parsePattern(p string) (ns utilsysctl.Namespace, nameOrPrefix string, prefixed bool, err error) {
	if len(p) > maxLength || !patternRegexp.MatchString(p) {
		return "", "", false, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, maxLength, patternFmt)
	}
	ns, nameOrPrefix, prefixed = utilsysctl.GetNamespace(p)
	if ns == utilsysctl.UnknownNamespace {
		return "", "", false, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
	}
	return ns, nameOrPrefix, prefixed, nil
}

// Allowlist is what a node lets pods set: exact names and prefixes, each
// with the kernel namespace it belongs to.
type Allowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewAllowlist builds an allowlist from names and patterns (ending in '*'),
// as the kubelet builds its own from the safe set plus allowedUnsafeSysctls.
func NewAllowlist(patterns []string) (*Allowlist, error) {
	a := &Allowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		ns, key, prefixed, err := parsePattern(p)
		if err != nil {
			return nil, err
		}
		if prefixed {
			a.prefixes[key] = ns
		} else {
			a.names[key] = ns
		}
	}
	return a, nil
}

// Check says why a pod may not set a sysctl, or nil: it must be allowed,
// and one of the network or IPC namespace must not be the host's.
func (a *Allowlist) Check(name string, hostNetwork, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, found := a.names[name]
	if !found {
		for p, pns := range a.prefixes {
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNetwork:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// AdmitPod returns the kubelet's rejection message for the first sysctl
// of the pod it may not set ("forbidden sysctl: ..."), or "" to admit it.
func (a *Allowlist) AdmitPod(pod *v1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := a.Check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return fmt.Sprintf("forbidden sysctl: %v", err)
		}
	}
	return ""
}
