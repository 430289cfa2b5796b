package scheduler

import (
	"math"

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
// constraints.
func hardSpreadConstraints(pod *v1.Pod) []spreadConstraint {
	return spreadConstraints(pod, v1.DoNotSchedule)
}

// softSpreadConstraints are its ScheduleAnyway ones.
func softSpreadConstraints(pod *v1.Pod) []spreadConstraint {
	return spreadConstraints(pod, v1.ScheduleAnyway)
}

// spreadConstraints are the pod's constraints of one kind, their
// selectors with the matchLabelKeys' values of the pod's labels added, as
// upstream.
func spreadConstraints(pod *v1.Pod, when v1.UnsatisfiableConstraintAction) []spreadConstraint {
	var out []spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != when {
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

// spreadScoreWeight is the PodTopologySpread score plugin's default weight.
const spreadScoreWeight = 2

// spreadScores is upstream's PodTopologySpread score for the pod's
// ScheduleAnyway constraints, normalised to 0-100 over the feasible nodes:
// fewer matching pods in a node's domain (or on the node itself, for the
// hostname key) score higher, each constraint weighted by log(domains+2)
// of the feasible nodes; a feasible node missing a constraint's key
// scores 0.
func spreadScores(pod *v1.Pod, cons []spreadConstraint, feasible, all []*nodeInfo) []int64 {
	weights := make([]float64, len(cons))
	counts := make([]map[string]int, len(cons))
	for i, c := range cons {
		domains := map[string]bool{}
		for _, ni := range feasible {
			if v, ok := ni.Node.Labels[c.TopologyKey]; ok {
				domains[v] = true
			}
		}
		weights[i] = math.Log(float64(len(domains) + 2))
		counts[i] = spreadCounts(pod, c, cons, all)
	}
	raw := make([]int64, len(feasible))
	ignored := make([]bool, len(feasible))
	for n, ni := range feasible {
		if !hasSpreadKeys(ni.Node, cons) {
			ignored[n] = true
			continue
		}
		var s float64
		for i, c := range cons {
			cnt := counts[i][ni.Node.Labels[c.TopologyKey]]
			s += float64(cnt)*weights[i] + float64(c.MaxSkew-1)
		}
		raw[n] = int64(math.Round(s))
	}
	return normalizeSpreadScores(raw, ignored)
}

// normalizeSpreadScores is upstream's NormalizeScore for the plugin: the
// lowest raw score gets 100, the others MaxNodeScore*(max+min-s)/max.
func normalizeSpreadScores(raw []int64, ignored []bool) []int64 {
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i, s := range raw {
		if ignored[i] {
			continue
		}
		minScore, maxScore = min(minScore, s), max(maxScore, s)
	}
	out := make([]int64, len(raw))
	for i, s := range raw {
		switch {
		case ignored[i]:
		case maxScore == 0:
			out[i] = maxNodeScore
		default:
			out[i] = maxNodeScore * (maxScore + minScore - s) / maxScore
		}
	}
	return out
}
