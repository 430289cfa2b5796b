package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withSpread(key string, maxSkew int32, when v1.UnsatisfiableConstraintAction, mutate ...func(*v1.TopologySpreadConstraint)) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		for _, m := range mutate {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

// As upstream's PodTopologySpread Filter: zones a (nodes a1, a2) and b
// (b1) with web pods placed on them; maxSkew 1 over zones.
func TestPodTopologySpread(t *testing.T) {
	const zone = "topology.kubernetes.io/zone"
	a1 := node("a1", "1", "1Gi", withLabels(zone, "a"))
	a2 := node("a2", "1", "1Gi", withLabels(zone, "a"))
	b1 := node("b1", "1", "1Gi", withLabels(zone, "b"))
	web := func(name string, mutate ...func(*v1.Pod)) *v1.Pod {
		return pod(name, "", "", append([]func(*v1.Pod){withPodLabels("app", "web")}, mutate...)...)
	}
	spread := web("new", withSpread(zone, 1, v1.DoNotSchedule))
	zoneB := []*nodeInfo{newNodeInfo(b1)}
	zoneA2 := newNodeInfo(a2, web("w2"))
	terminating := web("gone", func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{} })
	otherNS := web("ns", func(p *v1.Pod) { p.Namespace = "other" })
	three := int32(3)
	honor := v1.NodeInclusionPolicyHonor
	runFilterCases(t, podTopologySpread, []filterCase{
		{name: "no constraints", pod: web("p"), node: a1, pods: []*v1.Pod{web("w1")}, other: zoneB},
		{name: "balanced: either zone", pod: spread, node: a1, other: zoneB},
		{name: "zone a one ahead", pod: spread, node: a1, pods: []*v1.Pod{web("w1")}, other: zoneB,
			want: []string{reasonSpreadNotMatch}},
		{name: "zone b behind", pod: spread, node: b1, other: []*nodeInfo{newNodeInfo(a1, web("w1"))}},
		{name: "counted over the zone's nodes", pod: spread, node: a1, other: []*nodeInfo{zoneA2, newNodeInfo(b1)},
			want: []string{reasonSpreadNotMatch}},
		{name: "terminating and other-namespace pods do not count", pod: spread, node: a1,
			pods: []*v1.Pod{terminating, otherNS}, other: zoneB},
		{name: "other labels do not count", pod: spread, node: a1, pods: []*v1.Pod{pod("x", "", "", withPodLabels("app", "db"))}, other: zoneB},
		{name: "node without the key", pod: spread, node: node("bare", "1", "1Gi"), other: zoneB,
			want: []string{reasonSpreadMissingLabel}},
		{name: "ScheduleAnyway is not a filter", pod: web("p", withSpread(zone, 1, v1.ScheduleAnyway)), node: a1,
			pods: []*v1.Pod{web("w1"), web("w2")}, other: zoneB},
		{name: "minDomains above the domains: minimum 0", node: b1,
			pod:  web("p", withSpread(zone, 1, v1.DoNotSchedule, func(c *v1.TopologySpreadConstraint) { c.MinDomains = &three })),
			pods: []*v1.Pod{web("w1")}, other: []*nodeInfo{newNodeInfo(a1, web("w2"))}, want: []string{reasonSpreadNotMatch}},
		{name: "an incoming pod not matching adds nothing", node: a1, pods: []*v1.Pod{web("w1")}, other: zoneB,
			pod: pod("p", "", "", withPodLabels("app", "db"), withSpread(zone, 1, v1.DoNotSchedule))},
		{name: "matchLabelKeys narrows the count", node: a1, other: zoneB,
			pods: []*v1.Pod{web("old", withPodLabels("pod-template-hash", "v1"))},
			pod: web("p", withPodLabels("pod-template-hash", "v2"),
				withSpread(zone, 1, v1.DoNotSchedule, func(c *v1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"pod-template-hash"} }))},
		{name: "nodeTaintsPolicy Honor leaves out untolerated nodes", node: a1, pods: []*v1.Pod{web("w1")},
			other: []*nodeInfo{newNodeInfo(node("b1", "1", "1Gi", withLabels(zone, "b"), withTaints(v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule})))},
			pod:   web("p", withSpread(zone, 1, v1.DoNotSchedule, func(c *v1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }))},
		{name: "nodeTaintsPolicy Ignore (default) counts them", node: a1, pods: []*v1.Pod{web("w1")},
			other: []*nodeInfo{newNodeInfo(node("b1", "1", "1Gi", withLabels(zone, "b"), withTaints(v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule})))},
			pod:   spread, want: []string{reasonSpreadNotMatch}},
		{name: "nodeAffinityPolicy Honor (default) leaves out unselected nodes", node: a1, pods: []*v1.Pod{web("w1")}, other: zoneB,
			pod: web("p", withSpread(zone, 1, v1.DoNotSchedule), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{zone: "a"} })},
	})
}

// As upstream's PodTopologySpread Score for ScheduleAnyway constraints:
// the node whose domain has the fewest matching pods scores 100, the
// others MaxNodeScore*(max+min-s)/max; a node without the key scores 0.
func TestPodTopologySpreadScores(t *testing.T) {
	const zone = "topology.kubernetes.io/zone"
	web := func(name string) *v1.Pod { return pod(name, "", "", withPodLabels("app", "web")) }
	a := newNodeInfo(node("a", "1", "1Gi", withLabels(zone, "a")), web("w1"), web("w2"))
	b := newNodeInfo(node("b", "1", "1Gi", withLabels(zone, "b")), web("w3"))
	c := newNodeInfo(node("c", "1", "1Gi", withLabels(zone, "c")))
	bare := newNodeInfo(node("bare", "1", "1Gi"))
	p := pod("p", "", "", withPodLabels("app", "web"), withSpread(zone, 1, v1.ScheduleAnyway))
	nodes := []*nodeInfo{a, b, c, bare}
	got := spreadScores(p, softSpreadConstraints(p), nodes, nodes)
	// Three zones: weight log(5); raw a = round(2*1.609) = 3, b = 2, c = 0.
	want := []int64{0, 33, 100, 0}
	if !slices.Equal(got, want) {
		t.Errorf("scores %v, want %v", got, want)
	}
	if len(hardSpreadConstraints(p)) != 0 || len(softSpreadConstraints(pod("q", "", ""))) != 0 {
		t.Error("constraints of the wrong kind resolved")
	}
	// With its own constraints, the pod is not spread as a controller's.
	owned := pod("o", "", "", ownedBy("rs1"), withSpread(zone, 1, v1.ScheduleAnyway))
	if n := sameControllerPods(owned, newNodeInfo(node("x", "1", "1Gi"), pod("s", "", "", ownedBy("rs1")))); n != 0 {
		t.Errorf("SelectorSpread counted %d for a pod with constraints", n)
	}
	// The scores reach the total, weighted 2.
	if total := scoreNodes(p, []*nodeInfo{a, c}, nodes); total[1] <= total[0] {
		t.Errorf("totals %v: the empty zone must win", total)
	}
}
