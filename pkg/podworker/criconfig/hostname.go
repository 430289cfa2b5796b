package criconfig

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits of the kernel's nodename (64 bytes with its terminating NUL for
// a hostname, the whole 64 for an FQDN), as the kubelet applies them.
const (
	maxHostnameLen = 63
	maxFQDNLen     = 64
)

// Hostname is the pod's short hostname: spec.hostnameOverride when set,
// else spec.hostname, else the pod name, cut to 63 characters without a
// trailing '-' or '.' (the kubelet's truncatePodHostnameIfNeeded).
func Hostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	switch {
	case pod.Spec.HostnameOverride != nil:
		h = *pod.Spec.HostnameOverride
	case h == "":
		h = pod.Name
	}
	if len(h) > maxHostnameLen {
		h = strings.TrimRight(h[:maxHostnameLen], "-.")
	}
	return h
}

// HostnameAndDomain is the kubelet's GeneratePodHostNameAndDomain: the
// short hostname and, with a subdomain, the pod's domain
// <subdomain>.<namespace>.svc.<clusterDomain>. hostnameOverride has no
// domain: it names the pod by itself, whatever hostname and subdomain say.
// The fields are checked again as the kubelet does, since a static pod
// never went through the API server's validation.
func HostnameAndDomain(pod *v1.Pod, clusterDomain string) (host, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		return Hostname(pod), "", nil
	}
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, ";"))
		}
	}
	if s := pod.Spec.Subdomain; s != "" {
		if msgs := validation.IsDNS1123Label(s); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", s, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc", s, pod.Namespace)
		if clusterDomain != "" {
			domain += "." + clusterDomain
		}
	}
	return Hostname(pod), domain, nil
}

// KernelHostname is the hostname the sandbox gets (the kubelet's
// GetNodenameForKernel): the pod's FQDN when setHostnameAsFQDN is true and
// the pod has a domain, else its short hostname. An FQDN longer than the
// kernel's 64 characters fails the sandbox, with the kubelet's message.
func KernelHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	host, domain, err := HostnameAndDomain(pod, clusterDomain)
	if err != nil || domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return host, err
	}
	fqdn := host + "." + domain
	if len(fqdn) > maxFQDNLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, maxFQDNLen, len(fqdn))
	}
	return fqdn, nil
}
