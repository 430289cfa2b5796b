package admission

import (
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// restrictNodeNode: a node writes only its own Node, and never what
// would steer workloads to it (taints, reserved labels), widen what it
// may read (configSource), tie its lifetime to another object (owners) or
// steer other nodes' traffic to it (podCIDR: kubenet routes every node's
// pod CIDRs to it; only the node IPAM controller assigns them). Upstream
// does not guard podCIDR (its registry only keeps a set one from
// changing): that check is ours.
func restrictNodeNode(node string, a *Attributes) error {
	requested := a.Name
	if a.Operation == admissionv1.Create {
		requested = a.ObjectName() // a create names the node in its body
	}
	if requested != node {
		return forbidden(a, "node %q is not allowed to modify node %q", node, requested)
	}
	switch a.Operation {
	case admissionv1.Create:
		n := a.Object.(*v1.Node)
		if n.Spec.ConfigSource != nil {
			return forbidden(a, "node %q is not allowed to create pods with a non-nil configSource", node) // sic
		}
		if bad := forbiddenNodeLabels(n.Labels, nil); len(bad) > 0 {
			return forbidden(a, "node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
		if n.Spec.PodCIDR != "" || len(n.Spec.PodCIDRs) > 0 {
			return forbidden(a, "node %q is not allowed to set podCIDR", node)
		}
	case admissionv1.Update:
		return restrictNodeUpdate(node, a, a.Object.(*v1.Node), a.OldObject.(*v1.Node))
	}
	return nil
}

func restrictNodeUpdate(node string, a *Attributes, n, old *v1.Node) error {
	// A nil configSource is let through: old kubelets drop the field.
	if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
		return forbidden(a, "node %q is not allowed to update configSource to a new non-nil configSource", node)
	}
	if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
		return forbidden(a, "node %q is not allowed to modify taints", node)
	}
	if !apiequality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
		return forbidden(a, "node %q is not allowed to modify ownerReferences", node)
	}
	if n.Spec.PodCIDR != old.Spec.PodCIDR || !slices.Equal(n.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		return forbidden(a, "node %q is not allowed to modify podCIDR", node)
	}
	if bad := forbiddenNodeLabels(n.Labels, old.Labels); len(bad) > 0 {
		return forbidden(a, "is not allowed to modify labels: %s", strings.Join(bad, ", "))
	}
	return nil
}

// forbiddenNodeLabels lists, sorted, the added, removed or changed labels
// a node may not set on itself: node-restriction.kubernetes.io ones, and
// kubernetes.io / k8s.io ones outside the kubelet's own set.
func forbiddenNodeLabels(labels, old map[string]string) []string {
	var bad []string
	for _, key := range modifiedLabels(labels, old) {
		ns := labelNamespace(key)
		if inDomain(ns, v1.LabelNamespaceNodeRestriction) ||
			((inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")) && !isKubeletLabel(key)) {
			bad = append(bad, key)
		}
	}
	sort.Strings(bad)
	return bad
}

func modifiedLabels(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// kubeletLabels are the labels a kubelet may set on its Node
// (k8s.io/kubelet/pkg/apis), besides those under kubeletLabelDomains.
var kubeletLabels = map[string]bool{
	v1.LabelHostname:                true,
	v1.LabelTopologyZone:            true,
	v1.LabelTopologyRegion:          true,
	v1.LabelFailureDomainBetaZone:   true,
	v1.LabelFailureDomainBetaRegion: true,
	v1.LabelInstanceType:            true,
	v1.LabelInstanceTypeStable:      true,
	v1.LabelOSStable:                true,
	v1.LabelArchStable:              true,
	"beta.kubernetes.io/os":         true,
	"beta.kubernetes.io/arch":       true,
}

var kubeletLabelDomains = []string{v1.LabelNamespaceSuffixKubelet, v1.LabelNamespaceSuffixNode}

func isKubeletLabel(key string) bool {
	if kubeletLabels[key] {
		return true
	}
	ns := labelNamespace(key)
	for _, d := range kubeletLabelDomains {
		if inDomain(ns, d) {
			return true
		}
	}
	return false
}

// labelNamespace is the prefix of a label key ("" without one).
func labelNamespace(key string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		return prefix
	}
	return ""
}

// inDomain: ns is domain or one of its subdomains.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

// restrictNodeLease: only the node's own lease, in kube-node-lease.
func restrictNodeLease(node string, a *Attributes) error {
	if a.Namespace != v1.NamespaceNodeLease {
		return forbidden(a, "can only access leases in the %q system namespace", v1.NamespaceNodeLease)
	}
	name := a.Name
	if a.Operation == admissionv1.Create {
		name = a.ObjectName()
	}
	if name != node {
		return forbidden(a, "can only access node lease with the same name as the requesting node")
	}
	return nil
}
