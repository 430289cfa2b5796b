package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestNormalizeScores(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []int64
		reverse bool
		want    []int64
	}{
		{"scale", []int64{0, 5, 10}, false, []int64{0, 50, 100}},
		{"reverse", []int64{0, 5, 10}, true, []int64{100, 50, 0}},
		{"all zero", []int64{0, 0}, false, []int64{0, 0}},
		{"all zero reversed", []int64{0, 0}, true, []int64{100, 100}},
	} {
		got := slices.Clone(tc.in)
		normalizeScores(got, tc.reverse)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

type scoreCase struct {
	name string
	pod  *v1.Pod
	node *v1.Node
	pods []*v1.Pod
	want int64
}

func runScoreCases(t *testing.T, fn func(*v1.Pod, *nodeInfo) int64, cases []scoreCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fn(tc.pod, newNodeInfo(tc.node, tc.pods...)); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLeastAllocated(t *testing.T) {
	n := node("n", "4", "4Gi")
	runScoreCases(t, leastAllocated, []scoreCase{
		{name: "empty node", pod: pod("p", "1", "1Gi"), node: n, want: 75},
		{name: "half used", pod: pod("p", "1", "1Gi"), node: n, pods: []*v1.Pod{pod("q", "1", "1Gi")}, want: 50},
		{name: "defaults for unset requests", pod: pod("p", "", ""), node: node("n", "1", "2000Mi"), want: (90 + 90) / 2},
		{name: "over capacity scores 0", pod: pod("p", "8", "8Gi"), node: n, want: 0},
	})
}

func TestBalancedAllocation(t *testing.T) {
	n := node("n", "4", "4Gi")
	runScoreCases(t, balancedAllocation, []scoreCase{
		{name: "balanced", pod: pod("p", "1", "1Gi"), node: n, want: 100},
		{name: "cpu heavy", pod: pod("p", "2", "0"), node: n, want: 75},
		{name: "with bound pods", pod: pod("p", "1", "0"), node: n, pods: []*v1.Pod{pod("q", "1", "2Gi")}, want: 100},
		{name: "best effort skipped", pod: pod("p", "", ""), node: n, want: 0},
	})
}

func TestPreferredNodeAffinity(t *testing.T) {
	prefer := func(p *v1.Pod) {
		term := func(w int32, k, v string) v1.PreferredSchedulingTerm {
			return v1.PreferredSchedulingTerm{Weight: w, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{v}}}}}
		}
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			term(10, "disk", "ssd"), term(5, "zone", "a")}}}
	}
	runScoreCases(t, preferredNodeAffinity, []scoreCase{
		{name: "no preference", pod: pod("p", "", ""), node: node("n", "1", "1Gi"), want: 0},
		{name: "one term", pod: pod("p", "", "", prefer), node: node("n", "1", "1Gi", withLabels("disk", "ssd")), want: 10},
		{name: "both terms", pod: pod("p", "", "", prefer), node: node("n", "1", "1Gi", withLabels("disk", "ssd", "zone", "a")), want: 15},
		{name: "none match", pod: pod("p", "", "", prefer), node: node("n", "1", "1Gi"), want: 0},
	})
}

func TestIntolerablePreferNoSchedule(t *testing.T) {
	soft := v1.Taint{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}
	runScoreCases(t, intolerablePreferNoSchedule, []scoreCase{
		{name: "untainted", pod: pod("p", "", ""), node: node("n", "1", "1Gi"), want: 0},
		{name: "one", pod: pod("p", "", ""), node: node("n", "1", "1Gi", withTaints(soft, notReadyTaint)), want: 1},
		{name: "tolerated", node: node("n", "1", "1Gi", withTaints(soft)),
			pod: pod("p", "", "", withTolerations(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists})), want: 0},
		{name: "NoSchedule toleration does not count", node: node("n", "1", "1Gi", withTaints(soft)),
			pod: pod("p", "", "", withTolerations(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})), want: 1},
	})
}

func TestSameControllerPods(t *testing.T) {
	n := node("n", "1", "1Gi")
	runScoreCases(t, sameControllerPods, []scoreCase{
		{name: "no controller", pod: pod("p", "", ""), node: n, pods: []*v1.Pod{pod("q", "", "", ownedBy("rs1"))}, want: 0},
		{name: "siblings", pod: pod("p", "", "", ownedBy("rs1")), node: n,
			pods: []*v1.Pod{pod("q", "", "", ownedBy("rs1")), pod("r", "", "", ownedBy("rs1")), pod("s", "", "", ownedBy("rs2"))}, want: 2},
	})
}

// TestSelectHost runs filters and scores end to end on a snapshot.
func TestSelectHost(t *testing.T) {
	first := func(int) int { return 0 }
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		pods  []*v1.Pod
		want  string
	}{
		{name: "least allocated", pod: pod("p", "100m", "100Mi"),
			nodes: []*v1.Node{node("small", "2", "4Gi"), node("big", "4", "4Gi")}, want: "big"},
		{name: "bound pods count", pod: pod("p", "100m", "100Mi"),
			nodes: []*v1.Node{node("a", "4", "4Gi"), node("b", "4", "4Gi")}, pods: []*v1.Pod{pod("q", "2", "2Gi", onNode("a"))}, want: "b"},
		{name: "spread siblings", pod: pod("p", "", "", ownedBy("rs")),
			nodes: []*v1.Node{node("a", "4", "4Gi"), node("b", "4", "4Gi")}, pods: []*v1.Pod{pod("q", "", "", ownedBy("rs"), onNode("a"))}, want: "b"},
		{name: "avoid PreferNoSchedule", pod: pod("p", "", ""),
			nodes: []*v1.Node{node("a", "4", "4Gi", withTaints(v1.Taint{Key: "k", Effect: v1.TaintEffectPreferNoSchedule})), node("b", "4", "4Gi")}, want: "b"},
		{name: "host port taken", pod: pod("p", "", "", withHostPort("", 80, "")),
			nodes: []*v1.Node{node("a", "4", "4Gi"), node("b", "4", "4Gi")}, pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, ""), onNode("a"))}, want: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := selectHost(tc.pod, buildSnapshot(tc.nodes, tc.pods), nil, first)
			if got != tc.want {
				t.Errorf("got %q (%s), want %q", got, msg, tc.want)
			}
		})
	}
	// Ties are broken by pick among the equally best nodes.
	nodes := buildSnapshot([]*v1.Node{node("a", "4", "4Gi"), node("b", "4", "4Gi")}, nil)
	for i, want := range []string{"a", "b"} {
		if got, _ := selectHost(pod("p", "", ""), nodes, nil, func(n int) int { return i % n }); got != want {
			t.Errorf("tie pick %d: got %q, want %q", i, got, want)
		}
	}
}
