package scheduler

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Upstream's PodTopologySpread filter reasons.
const (
	reasonSpreadNotMatch     = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissingLabel = reasonSpreadNotMatch + " (missing required label)"
)

// spreadConstraint is a DoNotSchedule constraint resolved against its pod.
type spreadConstraint struct {
	v1.TopologySpreadConstraint
	selector labels.Selector
}

// hardSpreadConstraints are the pod's whenUnsatisfiable: DoNotSchedule
// constraints, their selectors with the matchLabelKeys' values of the
// pod's labels added, as upstream.
func hardSpreadConstraints(pod *v1.Pod) []spreadConstraint {
	var out []spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != v1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		for _, key := range c.MatchLabelKeys {
			if v, ok := pod.Labels[key]; ok {
				if r, err := labels.NewRequirement(key, selection.In, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		out = append(out, spreadConstraint{TopologySpreadConstraint: c, selector: sel})
	}
	return out
}

// podTopologySpread is upstream's PodTopologySpread filter for the hard
// constraints: placing the pod on ni must not make the number of matching
// pods in ni's domain exceed the least populated domain's by more than
// maxSkew. Domains are those of the nodes that have every constraint's
// topology key and pass its node inclusion policies (nodeAffinityPolicy
// Honor and nodeTaintsPolicy Ignore by default); fewer domains than
// minDomains make the minimum 0. Terminating pods and pods of other
// namespaces do not count.
func podTopologySpread(pod *v1.Pod, ni *nodeInfo, all []*nodeInfo) []string {
	cons := hardSpreadConstraints(pod)
	if len(cons) == 0 {
		return nil
	}
	for _, c := range cons {
		if _, ok := ni.Node.Labels[c.TopologyKey]; !ok {
			return []string{reasonSpreadMissingLabel}
		}
	}
	for _, c := range cons {
		counts := spreadCounts(pod, c, cons, all)
		minMatch := -1
		for _, n := range counts {
			if minMatch < 0 || n < minMatch {
				minMatch = n
			}
		}
		if minMatch < 0 || c.MinDomains != nil && len(counts) < int(*c.MinDomains) {
			minMatch = 0
		}
		self := 0
		if c.selector.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		if counts[ni.Node.Labels[c.TopologyKey]]+self-minMatch > int(c.MaxSkew) {
			return []string{reasonSpreadNotMatch}
		}
	}
	return nil
}

// spreadCounts are the pods matching c in each domain of c's topology key.
func spreadCounts(pod *v1.Pod, c spreadConstraint, cons []spreadConstraint, all []*nodeInfo) map[string]int {
	counts := map[string]int{}
	for _, other := range all {
		if !hasSpreadKeys(other.Node, cons) || !spreadIncludes(pod, c, other.Node) {
			continue
		}
		v := other.Node.Labels[c.TopologyKey]
		n := counts[v]
		for _, p := range other.Pods {
			if p.Namespace == pod.Namespace && p.DeletionTimestamp == nil && c.selector.Matches(labels.Set(p.Labels)) {
				n++
			}
		}
		counts[v] = n
	}
	return counts
}

func hasSpreadKeys(n *v1.Node, cons []spreadConstraint) bool {
	for _, c := range cons {
		if _, ok := n.Labels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// spreadIncludes is upstream's MatchNodeInclusionPolicies.
func spreadIncludes(pod *v1.Pod, c spreadConstraint, n *v1.Node) bool {
	if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !ok || err != nil {
			return false
		}
	}
	if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(discard, n.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false)
		if untolerated {
			return false
		}
	}
	return true
}
