package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// Upstream's reason strings (pkg/scheduler/framework/plugins/...), which
// users read in FailedScheduling events and grep for.
const (
	reasonUnschedulable          = "node(s) were unschedulable"
	reasonNotReady               = "node(s) were not ready"
	reasonNodeAffinity           = "node(s) didn't match Pod's node affinity/selector"
	reasonNodePorts              = "node(s) didn't have free ports for the requested pod ports"
	reasonTooManyPods            = "Too many pods"
	reasonAffinityNotMatch       = "node(s) didn't match pod affinity rules"
	reasonAntiAffinityNotMatch   = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity   = "node(s) didn't satisfy existing pods anti-affinity rules"
	reasonUntoleratedTaintFormat = "node(s) had untolerated taint {%s: %s}"
	noNodesAvailable             = "no nodes available to schedule pods"
)

// filterFunc decides whether pod fits ni; it returns the reasons it does
// not (nil: fits). all is every node, for rules across topology domains.
type filterFunc func(pod *v1.Pod, ni *nodeInfo, all []*nodeInfo) []string

type filter struct {
	name string
	fn   filterFunc // nil: a per-cycle filter, taken from the cycle state
}

// filters run in upstream's order; a node's first failing filter gives
// its reasons.
var filters = []filter{
	{"NodeUnschedulable", nodeUnschedulable},
	{"TaintToleration", taintToleration},
	{"NodeReady", nodeReady},
	{"NodeAffinity", nodeAffinity},
	{"NodePorts", nodePorts},
	{"NodeResourcesFit", nodeResourcesFit},
	{"VolumeRestrictions", nil},
	{"VolumeBinding", nil},
	{"PodTopologySpread", podTopologySpread},
	{"InterPodAffinity", interPodAffinity},
}

// cycleState is what one scheduling cycle computed before filtering
// (upstream's PreFilter): a message that makes the pod unschedulable
// everywhere, and the filters bound to API objects other than nodes and
// pods (volumes), by name. A nil cycleState has neither.
type cycleState struct {
	preFilterMsg string
	filters      map[string]filterFunc
}

func (cs *cycleState) filter(name string) filterFunc {
	if cs == nil {
		return nil
	}
	return cs.filters[name]
}

// runFilters returns the reasons pod does not fit ni (nil: it fits).
func runFilters(pod *v1.Pod, ni *nodeInfo, all []*nodeInfo, cs *cycleState) []string {
	for _, f := range filters {
		fn := f.fn
		if fn == nil {
			if fn = cs.filter(f.name); fn == nil {
				continue
			}
		}
		if reasons := fn(pod, ni, all); len(reasons) > 0 {
			return reasons
		}
	}
	return nil
}

// fitErrorMessage formats upstream's FitError: "0/3 nodes are available:
// 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}." Counts are
// per reason; the reasons are sorted as strings.
func fitErrorMessage(numNodes int, reasons map[string]int) string {
	if numNodes == 0 {
		return noNodesAvailable
	}
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available:", numNodes)
	if len(parts) > 0 {
		msg += " " + strings.Join(parts, ", ") + "."
	}
	return msg
}

var discard = logr.Discard()

// nodeUnschedulable: spec.unschedulable unless the pod tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint.
func nodeUnschedulable(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	if !ni.Node.Spec.Unschedulable {
		return nil
	}
	taint := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(discard, pod.Spec.Tolerations, &taint, false) {
		return nil
	}
	return []string{reasonUnschedulable}
}

// taintToleration: every NoSchedule and NoExecute taint must be tolerated.
func taintToleration(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(discard, ni.Node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false)
	if !untolerated {
		return nil
	}
	return []string{fmt.Sprintf(reasonUntoleratedTaintFormat, taint.Key, taint.Value)}
}

// nodeReady: the Ready condition must be True. Upstream relies on the
// node lifecycle controller's not-ready/unreachable taints alone; this
// also covers nodes whose taint is not set yet. Pods that tolerate the
// not-ready NoSchedule taint (DaemonSet pods) may still land there.
func nodeReady(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	for _, c := range ni.Node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			return nil
		}
	}
	taint := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(discard, pod.Spec.Tolerations, &taint, false) {
		return nil
	}
	return []string{reasonNotReady}
}

// nodeAffinity: spec.nodeSelector and the required node affinity.
func nodeAffinity(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(ni.Node); ok && err == nil {
		return nil
	}
	return []string{reasonNodeAffinity}
}

// nodePorts: host ports must be free (0.0.0.0 overlaps every address).
func nodePorts(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	for _, want := range podspec.HostPorts(pod) {
		for _, used := range ni.UsedPorts {
			if want.Conflicts(used) {
				return []string{reasonNodePorts}
			}
		}
	}
	return nil
}

// nodeResourcesFit: the pod's requests fit the allocatable resources
// minus the requests of the node's pods, and the pod count fits.
func nodeResourcesFit(pod *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	var reasons []string
	if int64(len(ni.Pods))+1 > ni.AllowedPods {
		reasons = append(reasons, reasonTooManyPods)
	}
	req := podRequests(pod, false)
	alloc, used := ni.Allocatable, ni.Requested
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, "Insufficient ephemeral-storage")
	}
	names := make([]string, 0, len(req.Scalar))
	for name := range req.Scalar {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		n := v1.ResourceName(name)
		if q := req.Scalar[n]; q > 0 && q > alloc.Scalar[n]-used.Scalar[n] {
			reasons = append(reasons, "Insufficient "+name)
		}
	}
	return reasons
}

// affinityTerm is a pod (anti-)affinity term resolved against its owner.
type affinityTerm struct {
	namespaces  map[string]bool // nil: all namespaces
	selector    labels.Selector
	topologyKey string
}

func (t affinityTerm) matches(p *v1.Pod) bool {
	return (t.namespaces == nil || t.namespaces[p.Namespace]) && t.selector.Matches(labels.Set(p.Labels))
}

// affinityTerms resolves terms of owner. A non-empty namespaceSelector
// cannot be evaluated without namespace labels; such a term counts only
// its listed namespaces (or the owner's).
func affinityTerms(owner *v1.Pod, terms []v1.PodAffinityTerm) []affinityTerm {
	out := make([]affinityTerm, 0, len(terms))
	for _, t := range terms {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		at := affinityTerm{selector: sel, topologyKey: t.TopologyKey}
		allNS := t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0
		if !allNS {
			at.namespaces = map[string]bool{}
			for _, ns := range t.Namespaces {
				at.namespaces[ns] = true
			}
			if len(t.Namespaces) == 0 {
				at.namespaces[owner.Namespace] = true
			}
		}
		out = append(out, at)
	}
	return out
}

func requiredAffinity(p *v1.Pod) []v1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

func requiredAntiAffinity(p *v1.Pod) []v1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// sameDomain reports whether other lies in ni's domain of key; a node
// without the label is in no domain.
func sameDomain(ni, other *nodeInfo, key string) bool {
	v, ok := ni.Node.Labels[key]
	if !ok {
		return false
	}
	ov, ok := other.Node.Labels[key]
	return ok && ov == v
}

// interPodAffinity: required pod affinity and anti-affinity of the pod,
// and the required anti-affinity of pods already placed, over topology
// domains (kubernetes.io/hostname: the node itself), as upstream.
func interPodAffinity(pod *v1.Pod, ni *nodeInfo, all []*nodeInfo) []string {
	if terms := affinityTerms(pod, requiredAffinity(pod)); len(terms) > 0 {
		for _, t := range terms {
			if _, ok := ni.Node.Labels[t.topologyKey]; !ok {
				return []string{reasonAffinityNotMatch}
			}
		}
		// As upstream, a pod counts when it matches every term, and each
		// term needs such a pod in the node's domain of its topology key.
		satisfied := make([]bool, len(terms))
		anywhere := false
		for _, other := range all {
			for _, p := range other.Pods {
				if !matchesAll(terms, p) {
					continue
				}
				anywhere = true
				for i, t := range terms {
					satisfied[i] = satisfied[i] || sameDomain(ni, other, t.topologyKey)
				}
			}
		}
		ok := true
		for _, s := range satisfied {
			ok = ok && s
		}
		// The first pod of a group with affinity to itself may go anywhere.
		if !ok && (anywhere || !matchesAll(terms, pod)) {
			return []string{reasonAffinityNotMatch}
		}
	}
	if terms := affinityTerms(pod, requiredAntiAffinity(pod)); len(terms) > 0 {
		for _, other := range all {
			for _, p := range other.Pods {
				for _, t := range terms {
					if t.matches(p) && sameDomain(ni, other, t.topologyKey) {
						return []string{reasonAntiAffinityNotMatch}
					}
				}
			}
		}
	}
	for _, other := range all {
		for _, p := range other.Pods {
			for _, t := range affinityTerms(p, requiredAntiAffinity(p)) {
				if t.matches(pod) && sameDomain(ni, other, t.topologyKey) {
					return []string{reasonExistingAntiAffinity}
				}
			}
		}
	}
	return nil
}

func matchesAll(terms []affinityTerm, p *v1.Pod) bool {
	for _, t := range terms {
		if !t.matches(p) {
			return false
		}
	}
	return true
}
