package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxHostnameOverrideLen is the kernel's nodename size, which
// hostnameOverride is held to (the API documents "at most 64
// characters").
const maxHostnameOverrideLen = 64

// validateHostname checks the fields that name the pod's host: hostname
// and subdomain are DNS labels; hostnameOverride (KEP-4762, GA in v1.37)
// is a DNS subdomain of at most 64 characters that neither a host-network
// pod (whose hostname is the node's) nor setHostnameAsFQDN (which it
// replaces) may be combined with, as upstream's pod validation.
func validateHostname(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Hostname != "" {
		allErrs = append(allErrs, dnsLabel(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, dnsLabel(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if spec.HostnameOverride == nil {
		return allErrs
	}
	p, v := fldPath.Child("hostnameOverride"), *spec.HostnameOverride
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		allErrs = append(allErrs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(v) > maxHostnameOverrideLen {
		allErrs = append(allErrs, field.TooLong(p, v, maxHostnameOverrideLen))
	}
	return append(allErrs, dnsSubdomain(v, p)...)
}
