package criconfig

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// The kubelet's default masked and read-only /proc and /sys paths for
// unprivileged containers.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// effectiveSecurity merges the pod-level settings under the container's.
type effectiveSecurity struct {
	RunAsUser    *int64
	RunAsGroup   *int64
	RunAsNonRoot bool
	// SELinux is the container's seLinuxOptions, else the pod's: the
	// container's replace the pod's whole, as the kubelet's
	// DetermineEffectiveSecurityContext does.
	SELinux *v1.SELinuxOptions
}

func effective(pod *v1.Pod, c *v1.Container) effectiveSecurity {
	var e effectiveSecurity
	if psc := pod.Spec.SecurityContext; psc != nil {
		e.RunAsUser, e.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
		e.RunAsNonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		e.SELinux = psc.SELinuxOptions
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			e.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			e.RunAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			e.RunAsNonRoot = *sc.RunAsNonRoot
		}
		if sc.SELinuxOptions != nil {
			e.SELinux = sc.SELinuxOptions
		}
	}
	return e
}

func namespaceOptions(pod *v1.Pod) *criv1.NamespaceOption {
	ns := &criv1.NamespaceOption{
		Network: criv1.NamespaceMode_POD,
		Pid:     criv1.NamespaceMode_CONTAINER,
		Ipc:     criv1.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = criv1.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = criv1.NamespaceMode_NODE
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = criv1.NamespaceMode_POD
	}
	if pod.Spec.HostPID {
		ns.Pid = criv1.NamespaceMode_NODE
	}
	ns.UsernsOptions = userNamespace(pod)
	return ns
}

// userNamespace is the kubelet's choice: the node's user namespace unless
// hostUsers is false; then the pod's own, whose mappings the agent
// allocates (WithUserNamespace). Mode POD without them makes a runtime
// fail rather than run the pod with the host's users.
func userNamespace(pod *v1.Pod) *criv1.UserNamespace {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return &criv1.UserNamespace{Mode: criv1.NamespaceMode_POD}
	}
	return &criv1.UserNamespace{Mode: criv1.NamespaceMode_NODE}
}

func containerSecurity(pod *v1.Pod, c *v1.Container) *criv1.LinuxContainerSecurityContext {
	e := effective(pod, c)
	sc := c.SecurityContext
	out := &criv1.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if e.RunAsUser != nil {
		out.RunAsUser = &criv1.Int64Value{Value: *e.RunAsUser}
	}
	if e.RunAsGroup != nil {
		out.RunAsGroup = &criv1.Int64Value{Value: *e.RunAsGroup}
	}
	out.SelinuxOptions = selinuxOption(e.SELinux)
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.SupplementalGroups = append([]int64(nil), psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
		out.SupplementalGroupsPolicy = SupplementalGroupsPolicy(psc)
	}
	privileged := sc != nil && sc.Privileged != nil && *sc.Privileged
	out.Privileged = privileged
	if sc != nil {
		if sc.Capabilities != nil {
			out.Capabilities = &criv1.Capability{
				AddCapabilities:  capNames(sc.Capabilities.Add),
				DropCapabilities: capNames(sc.Capabilities.Drop),
			}
		}
		out.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	}
	if !privileged && (sc == nil || sc.ProcMount == nil || *sc.ProcMount != v1.UnmaskedProcMount) {
		out.MaskedPaths = defaultMaskedPaths
		out.ReadonlyPaths = defaultReadonlyPaths
	}
	return out
}

func capNames(caps []v1.Capability) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}

// RunAsNonRoot tells whether the container must run as non-root, which
// only the image's user can settle when no UID is set: the worker then
// reads the image's status for VerifyRunAsNonRoot.
func RunAsNonRoot(pod *v1.Pod, c *v1.Container) bool { return effective(pod, c).RunAsNonRoot }

// VerifyRunAsNonRoot applies runAsNonRoot the way the kubelet does: the
// explicit UID, else the image's user, must be provably non-zero.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, image *criv1.Image) error {
	e := effective(pod, c)
	if !e.RunAsNonRoot {
		return nil
	}
	podRef := podutil.Desc(pod)
	if e.RunAsUser != nil {
		if *e.RunAsUser == 0 {
			return &ConfigError{fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podRef, c.Name)}
		}
		return nil
	}
	if image.GetUid() != nil {
		if image.GetUid().GetValue() == 0 {
			return &ConfigError{fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podRef, c.Name)}
		}
		return nil
	}
	user := image.GetUsername()
	if user == "" {
		return &ConfigError{fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podRef, c.Name)}
	}
	if _, err := strconv.ParseInt(user, 10, 64); err != nil {
		return &ConfigError{fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, podRef, c.Name)}
	}
	return nil
}

// seccompProfile is the kubelet's choice of a container's seccomp profile
// (kuberuntime getSeccompProfile): the container's seccompProfile, else the
// pod's, else RuntimeDefault when the node's seccompDefault is on, else
// Unconfined. The seccomp annotations are not read: the kubelet stopped
// reading them in 1.27. A Localhost profile is a file under the node's
// seccomp root (<root-dir>/seccomp).
func seccompProfile(pod *v1.Pod, c *v1.Container, node Node) (*criv1.SecurityProfile, error) {
	var p *v1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if psc := pod.Spec.SecurityContext; psc != nil {
		p = psc.SeccompProfile
	}
	switch {
	case p == nil && node.SeccompDefault, p != nil && p.Type == v1.SeccompProfileTypeRuntimeDefault:
		return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, &ConfigError{"localhostProfile must be set if seccompProfile type is Localhost."}
		}
		return &criv1.SecurityProfile{
			ProfileType:  criv1.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(node.SeccompProfileRoot, *p.LocalhostProfile),
		}, nil
	}
	return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_Unconfined}, nil
}

// sandboxSeccomp is the sandbox's profile: always RuntimeDefault, as the
// kubelet forces it (kubernetes issue 84623) so that pod-level profiles
// can be as tight as the containers need.
func sandboxSeccomp() *criv1.SecurityProfile {
	return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_RuntimeDefault}
}

// setSecurityProfiles fills the container's seccomp and AppArmor
// profiles, which may be the user's error to fix.
func setSecurityProfiles(sc *criv1.LinuxContainerSecurityContext, pod *v1.Pod, c *v1.Container, node Node) error {
	var err error
	if sc.Seccomp, err = seccompProfile(pod, c, node); err != nil {
		return err
	}
	sc.Apparmor, sc.ApparmorProfile, err = appArmorSecurity(pod, c)
	return err
}

// AppArmorProfile is the AppArmor profile the kubelet gives a container
// (pkg/security/apparmor GetProfile): the container's appArmorProfile,
// else its container.apparmor.security.beta.kubernetes.io/<name>
// annotation (static pods never have them copied to the fields), else the
// pod's appArmorProfile; nil when none is set. An annotation value that is
// none of runtime/default, unconfined, localhost/<name> counts as unset.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if v, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case v == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case v == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		return psc.AppArmorProfile
	}
	return nil
}

// appArmorSecurity is the CRI form of a container's AppArmor profile, as
// the kubelet sends it: the Apparmor field and the deprecated
// ApparmorProfile string older runtimes read. Both stay empty when the pod
// sets no profile (the runtime's default applies).
func appArmorSecurity(pod *v1.Pod, c *v1.Container) (*criv1.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", &ConfigError{"missing localhost apparmor profile name"}
		}
		return &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", &ConfigError{fmt.Sprintf("unknown apparmor profile type: %q", p.Type)}
}

// selinuxOption is the CRI form of seLinuxOptions (nil for none). Where
// SELinux is off the runtime checks the level's format and applies nothing.
func selinuxOption(o *v1.SELinuxOptions) *criv1.SELinuxOption {
	if o == nil {
		return nil
	}
	return &criv1.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// SupplementalGroupsPolicy is the pod's policy for the CRI: Merge (the
// groups of the image's /etc/group join) unless it asks for Strict. Node
// admission has refused Strict where the runtime does not support it.
func SupplementalGroupsPolicy(psc *v1.PodSecurityContext) criv1.SupplementalGroupsPolicy {
	if psc != nil && psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return criv1.SupplementalGroupsPolicy_Strict
	}
	return criv1.SupplementalGroupsPolicy_Merge
}
