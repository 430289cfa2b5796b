package podspec

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedFSGroupChangePolicies = sets.New(v1.FSGroupChangeOnRootMismatch, v1.FSGroupChangeAlways)
	supportedSupplementalGroups    = sets.New(v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict)
	supportedSELinuxChangePolicies = sets.New(v1.SELinuxChangePolicyRecursive, v1.SELinuxChangePolicyMountOption)

	// A sysctl name: segments joined by '.' or '/', at most 253 characters.
	sysctlRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
)

// validatePodSecurity checks spec.securityContext and the host namespace
// switches that go with it.
func validatePodSecurity(spec *v1.PodSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.HostUsers != nil && !*spec.HostUsers {
		// User namespaces cannot be combined with the host's other namespaces
		// (upstream spells the last two paths this way; hostNetwork only with
		// the alpha UserNamespacesHostNetworkSupport gate), nor with block
		// devices, which are neither idmapped nor chowned.
		const msg = "when `hostUsers` is false"
		for _, f := range []setField{{"hostNetwork", spec.HostNetwork}, {"HostPID", spec.HostPID}, {"HostIPC", spec.HostIPC}} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(specPath.Child(f.name), msg))
			}
		}
		visit := func(list []v1.Container, name string) {
			for i := range list {
				if len(list[i].VolumeDevices) > 0 {
					allErrs = append(allErrs, field.Forbidden(specPath.Child(name).Index(i).Child("volumeDevices"), msg))
				}
			}
		}
		visit(spec.InitContainers, "initContainers")
		visit(spec.Containers, "containers")
		for i := range spec.EphemeralContainers {
			if len(spec.EphemeralContainers[i].VolumeDevices) > 0 {
				allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers").Index(i).Child("volumeDevices"), msg))
			}
		}
	}
	sc := spec.SecurityContext
	if sc == nil {
		return allErrs
	}
	p := specPath.Child("securityContext")
	allErrs = append(allErrs, validateIDs(sc.RunAsUser, sc.RunAsGroup, p)...)
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			allErrs = append(allErrs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			allErrs = append(allErrs, field.Invalid(p.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if s := spec.ShareProcessNamespace; s != nil && *s && spec.HostPID {
		allErrs = append(allErrs, field.Invalid(p.Child("shareProcessNamespace"), *s, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	allErrs = append(allErrs, validateSysctls(spec, p.Child("sysctls"))...)
	if v := sc.FSGroupChangePolicy; v != nil && !supportedFSGroupChangePolicies.Has(*v) {
		allErrs = append(allErrs, field.NotSupported(p.Child("fsGroupChangePolicy"), v, sets.List(supportedFSGroupChangePolicies)))
	}
	if v := sc.SupplementalGroupsPolicy; v != nil && !supportedSupplementalGroups.Has(*v) {
		allErrs = append(allErrs, field.NotSupported(p.Child("supplementalGroupsPolicy"), *v, sets.List(supportedSupplementalGroups)))
	}
	if v := sc.SELinuxChangePolicy; v != nil && !supportedSELinuxChangePolicies.Has(*v) {
		allErrs = append(allErrs, field.NotSupported(p.Child("seLinuxChangePolicy"), *v, sets.List(supportedSELinuxChangePolicies)))
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	return append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

// validateSecurityContext checks a container's securityContext.
func validateSecurityContext(sc *v1.SecurityContext, hostUsers bool, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	allErrs := validateIDs(sc.RunAsUser, sc.RunAsGroup, p)
	if pm := sc.ProcMount; pm != nil {
		if *pm != v1.DefaultProcMount && *pm != v1.UnmaskedProcMount {
			allErrs = append(allErrs, field.NotSupported(p.Child("procMount"), *pm, []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}))
		}
		if hostUsers && *pm == v1.UnmaskedProcMount {
			allErrs = append(allErrs, field.Invalid(p.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if ape := sc.AllowPrivilegeEscalation; ape != nil && !*ape {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

func validateIDs(runAsUser, runAsGroup *int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if runAsUser != nil {
		for _, msg := range validation.IsValidUserID(*runAsUser) {
			allErrs = append(allErrs, field.Invalid(p.Child("runAsUser"), *runAsUser, msg))
		}
	}
	if runAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*runAsGroup) {
			allErrs = append(allErrs, field.Invalid(p.Child("runAsGroup"), *runAsGroup, msg))
		}
	}
	return allErrs
}

func validateSysctls(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, s := range spec.SecurityContext.Sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlRegexp.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", 253, sysctlRegexp)))
		case names.Has(s.Name):
			allErrs = append(allErrs, field.Duplicate(p, s.Name))
		}
		names.Insert(s.Name)
		// Namespaced sysctls make no sense in a namespace shared with the host.
		switch ns := sysctlNamespace(s.Name); {
		case spec.HostNetwork && ns == "net":
			allErrs = append(allErrs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == "ipc":
			allErrs = append(allErrs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return allErrs
}

// sysctlNamespace tells which kernel namespace a sysctl belongs to: "net",
// "ipc" or "" (not namespaced). '/' works as a separator like '.'.
func sysctlNamespace(name string) string {
	name = strings.ReplaceAll(name, "/", ".")
	switch {
	case strings.HasPrefix(name, "net."):
		return "net"
	case name == "kernel.sem", strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"),
		strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	}
	return ""
}

func validateSeccompProfile(sp *v1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
	case "":
		allErrs = append(allErrs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("type"), sp.Type, []v1.SeccompProfileType{
			v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == v1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		allErrs = append(allErrs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == v1.SeccompProfileTypeLocalhost:
		allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, p.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		allErrs = append(allErrs, field.Invalid(p.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

func validateAppArmorProfile(ap *v1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	lp := p.Child("localhostProfile")
	switch ap.Type {
	case v1.AppArmorProfileTypeLocalhost:
		switch {
		case ap.LocalhostProfile == nil:
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		case strings.TrimSpace(*ap.LocalhostProfile) != *ap.LocalhostProfile:
			return field.ErrorList{field.Invalid(lp, *ap.LocalhostProfile, "must not be padded with whitespace")}
		case *ap.LocalhostProfile == "":
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		case len(*ap.LocalhostProfile) > 4095:
			return field.ErrorList{field.TooLong(lp, "", 4095)}
		}
	case v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(lp, ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "type is required when appArmorProfile is set")}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), ap.Type, []v1.AppArmorProfileType{
			v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined})}
	}
	return nil
}
