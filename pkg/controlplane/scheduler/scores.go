package scheduler

import (
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

const maxNodeScore = 100

// scorer gives one node's raw score; normalize, when set, maps the raw
// scores of all feasible nodes to 0-100 in place.
type scorer struct {
	name      string
	weight    int64
	score     func(pod *v1.Pod, ni *nodeInfo) int64
	normalize func(scores []int64)
}

// scorers carry upstream's default weights: NodeResourcesFit 1
// (LeastAllocated over cpu and memory), NodeResourcesBalancedAllocation 1,
// NodeAffinity 2, TaintToleration 3, and 2 for spreading (upstream's
// PodTopologySpread default constraints; here pods of the same controller
// across nodes).
var scorers = []scorer{
	{"NodeResourcesFit", 1, leastAllocated, nil},
	{"NodeResourcesBalancedAllocation", 1, balancedAllocation, nil},
	{"NodeAffinity", 2, preferredNodeAffinity, func(s []int64) { normalizeScores(s, false) }},
	{"TaintToleration", 3, intolerablePreferNoSchedule, func(s []int64) { normalizeScores(s, true) }},
	{"SelectorSpread", 2, sameControllerPods, func(s []int64) { normalizeScores(s, true) }},
}

// scoreNodes returns the weighted sum of every scorer for each feasible
// node; all are every node, over which topology spread counts.
func scoreNodes(pod *v1.Pod, nodes, all []*nodeInfo) []int64 {
	total := make([]int64, len(nodes))
	raw := make([]int64, len(nodes))
	for _, sc := range scorers {
		for i, ni := range nodes {
			raw[i] = sc.score(pod, ni)
		}
		if sc.normalize != nil {
			sc.normalize(raw)
		}
		for i := range raw {
			total[i] += sc.weight * raw[i]
		}
	}
	if soft := softSpreadConstraints(pod); len(soft) > 0 {
		for i, s := range spreadScores(pod, soft, nodes, all) {
			total[i] += spreadScoreWeight * s
		}
	}
	return total
}

// normalizeScores is upstream's DefaultNormalizeScore: scale to 0-100 by
// the maximum; reverse makes the lowest raw score the best.
func normalizeScores(scores []int64, reverse bool) {
	var maxCount int64
	for _, s := range scores {
		maxCount = max(maxCount, s)
	}
	for i, s := range scores {
		switch {
		case maxCount == 0 && reverse:
			scores[i] = maxNodeScore
		case maxCount == 0:
			scores[i] = 0
		case reverse:
			scores[i] = maxNodeScore - maxNodeScore*s/maxCount
		default:
			scores[i] = maxNodeScore * s / maxCount
		}
	}
}

// leastAllocated favours the node with the most cpu and memory left after
// placing the pod (scoring defaults for unset requests), equal weights.
func leastAllocated(pod *v1.Pod, ni *nodeInfo) int64 {
	req := podRequests(pod, true)
	one := func(requested, capacity int64) int64 {
		if capacity == 0 || requested > capacity {
			return 0
		}
		return (capacity - requested) * maxNodeScore / capacity
	}
	cpu := one(ni.NonZero.MilliCPU+req.MilliCPU, ni.Allocatable.MilliCPU)
	mem := one(ni.NonZero.Memory+req.Memory, ni.Allocatable.Memory)
	return (cpu + mem) / 2
}

// balancedAllocation favours nodes whose cpu and memory fractions stay
// close: (1 - standard deviation) * 100. Pods that request neither score
// 0 everywhere, as upstream skips them.
func balancedAllocation(pod *v1.Pod, ni *nodeInfo) int64 {
	req := podRequests(pod, false)
	if req.MilliCPU == 0 && req.Memory == 0 {
		return 0
	}
	fraction := func(requested, capacity int64) float64 {
		if capacity == 0 {
			return 1
		}
		return min(float64(requested)/float64(capacity), 1)
	}
	cpu := fraction(ni.Requested.MilliCPU+req.MilliCPU, ni.Allocatable.MilliCPU)
	mem := fraction(ni.Requested.Memory+req.Memory, ni.Allocatable.Memory)
	std := math.Abs(cpu-mem) / 2
	return int64((1 - std) * maxNodeScore)
}

// preferredNodeAffinity sums the weights of the matching preferred terms.
func preferredNodeAffinity(pod *v1.Pod, ni *nodeInfo) int64 {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return 0
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return 0
	}
	return terms.Score(ni.Node)
}

// intolerablePreferNoSchedule counts PreferNoSchedule taints the pod does
// not tolerate (tolerations with an empty effect count).
func intolerablePreferNoSchedule(pod *v1.Pod, ni *nodeInfo) int64 {
	var tols []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	var n int64
	for i := range ni.Node.Spec.Taints {
		t := &ni.Node.Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(discard, tols, t, false) {
			n++
		}
	}
	return n
}

// sameControllerPods counts the node's pods with the pod's controller.
func sameControllerPods(pod *v1.Pod, ni *nodeInfo) int64 {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return 0 // upstream's default constraints apply to pods without their own
	}
	var n int64
	for _, p := range ni.Pods {
		if p.Namespace != pod.Namespace {
			continue
		}
		if r := metav1.GetControllerOf(p); r != nil && r.UID == ref.UID {
			n++
		}
	}
	return n
}
