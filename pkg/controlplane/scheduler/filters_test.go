package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

type filterCase struct {
	name  string
	pod   *v1.Pod
	node  *v1.Node
	pods  []*v1.Pod // bound to node
	other []*nodeInfo
	want  []string
}

func runFilterCases(t *testing.T, fn filterFunc, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ni := newNodeInfo(tc.node, tc.pods...)
			all := append([]*nodeInfo{ni}, tc.other...)
			if got := fn(tc.pod, ni, all); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeUnschedulable(t *testing.T) {
	cordoned := func(n *v1.Node) { n.Spec.Unschedulable = true }
	runFilterCases(t, nodeUnschedulable, []filterCase{
		{name: "schedulable", pod: pod("p", "", ""), node: node("n", "1", "1Gi")},
		{name: "cordoned", pod: pod("p", "", ""), node: node("n", "1", "1Gi", cordoned), want: []string{reasonUnschedulable}},
		{name: "tolerated", node: node("n", "1", "1Gi", cordoned), pod: pod("p", "", "", withTolerations(v1.Toleration{
			Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}))},
	})
}

func TestTaintToleration(t *testing.T) {
	gpu := v1.Taint{Key: "gpu", Value: "yes", Effect: v1.TaintEffectNoExecute}
	runFilterCases(t, taintToleration, []filterCase{
		{name: "no taints", pod: pod("p", "", ""), node: node("n", "1", "1Gi")},
		{name: "not-ready", pod: pod("p", "", ""), node: node("n", "1", "1Gi", withTaints(notReadyTaint)),
			want: []string{"node(s) had untolerated taint {node.kubernetes.io/not-ready: }"}},
		{name: "unreachable NoExecute", pod: pod("p", "", ""),
			node: node("n", "1", "1Gi", withTaints(v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute})),
			want: []string{"node(s) had untolerated taint {node.kubernetes.io/unreachable: }"}},
		{name: "value shown", pod: pod("p", "", ""), node: node("n", "1", "1Gi", withTaints(gpu)),
			want: []string{"node(s) had untolerated taint {gpu: yes}"}},
		{name: "PreferNoSchedule ignored", pod: pod("p", "", ""),
			node: node("n", "1", "1Gi", withTaints(v1.Taint{Key: "k", Effect: v1.TaintEffectPreferNoSchedule}))},
		{name: "tolerated Equal", node: node("n", "1", "1Gi", withTaints(gpu)),
			pod: pod("p", "", "", withTolerations(v1.Toleration{Key: "gpu", Operator: v1.TolerationOpEqual, Value: "yes"}))},
		{name: "wrong value", node: node("n", "1", "1Gi", withTaints(gpu)),
			pod:  pod("p", "", "", withTolerations(v1.Toleration{Key: "gpu", Operator: v1.TolerationOpEqual, Value: "no"})),
			want: []string{"node(s) had untolerated taint {gpu: yes}"}},
		{name: "tolerate everything", node: node("n", "1", "1Gi", withTaints(gpu, notReadyTaint)),
			pod: pod("p", "", "", withTolerations(v1.Toleration{Operator: v1.TolerationOpExists}))},
	})
}

func TestNodeReady(t *testing.T) {
	unknown := func(n *v1.Node) { n.Status.Conditions = nil }
	runFilterCases(t, nodeReady, []filterCase{
		{name: "ready", pod: pod("p", "", ""), node: node("n", "1", "1Gi")},
		{name: "not ready", pod: pod("p", "", ""), node: node("n", "1", "1Gi", notReady), want: []string{reasonNotReady}},
		{name: "no condition", pod: pod("p", "", ""), node: node("n", "1", "1Gi", unknown), want: []string{reasonNotReady}},
		{name: "tolerates not-ready", node: node("n", "1", "1Gi", notReady), pod: pod("p", "", "", withTolerations(v1.Toleration{
			Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}))},
	})
}

func TestNodeAffinity(t *testing.T) {
	sel := func(kv ...string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{kv[0]: kv[1]} }
	}
	required := func(terms ...v1.NodeSelectorTerm) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	expr := func(key string, op v1.NodeSelectorOperator, vals ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}}}
	}
	fast := node("n", "1", "1Gi", withLabels("disk", "ssd", "cores", "8"))
	miss := []string{reasonNodeAffinity}
	runFilterCases(t, nodeAffinity, []filterCase{
		{name: "none", pod: pod("p", "", ""), node: fast},
		{name: "selector match", pod: pod("p", "", "", sel("disk", "ssd")), node: fast},
		{name: "selector miss", pod: pod("p", "", "", sel("disk", "hdd")), node: fast, want: miss},
		{name: "In", pod: pod("p", "", "", required(expr("disk", v1.NodeSelectorOpIn, "hdd", "ssd"))), node: fast},
		{name: "NotIn", pod: pod("p", "", "", required(expr("disk", v1.NodeSelectorOpNotIn, "ssd"))), node: fast, want: miss},
		{name: "Exists", pod: pod("p", "", "", required(expr("disk", v1.NodeSelectorOpExists))), node: fast},
		{name: "DoesNotExist", pod: pod("p", "", "", required(expr("disk", v1.NodeSelectorOpDoesNotExist))), node: fast, want: miss},
		{name: "Gt", pod: pod("p", "", "", required(expr("cores", v1.NodeSelectorOpGt, "4"))), node: fast},
		{name: "Lt", pod: pod("p", "", "", required(expr("cores", v1.NodeSelectorOpLt, "4"))), node: fast, want: miss},
		{name: "terms are ORed", node: fast, pod: pod("p", "", "", required(
			expr("disk", v1.NodeSelectorOpIn, "hdd"), expr("cores", v1.NodeSelectorOpIn, "8")))},
		{name: "matchFields metadata.name", node: fast, pod: pod("p", "", "", required(v1.NodeSelectorTerm{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"other"}}}})),
			want: miss},
		{name: "selector and affinity both apply", node: fast,
			pod: pod("p", "", "", sel("disk", "hdd"), required(expr("cores", v1.NodeSelectorOpExists))), want: miss},
	})
}

func TestNodePorts(t *testing.T) {
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	n := node("n", "1", "1Gi")
	runFilterCases(t, nodePorts, []filterCase{
		{name: "no ports", pod: pod("p", "", ""), node: n, pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, tcp))}},
		{name: "same port", pod: pod("p", "", "", withHostPort("", 80, tcp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, ""))}, want: []string{reasonNodePorts}},
		{name: "other protocol", pod: pod("p", "", "", withHostPort("", 80, udp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, tcp))}},
		{name: "other port", pod: pod("p", "", "", withHostPort("", 81, tcp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, tcp))}},
		{name: "different IPs", pod: pod("p", "", "", withHostPort("10.0.0.1", 80, tcp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("10.0.0.2", 80, tcp))}},
		{name: "0.0.0.0 overlaps an IP", pod: pod("p", "", "", withHostPort("0.0.0.0", 80, tcp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("10.0.0.2", 80, tcp))}, want: []string{reasonNodePorts}},
		{name: "IP overlaps unset", pod: pod("p", "", "", withHostPort("10.0.0.1", 80, tcp)), node: n,
			pods: []*v1.Pod{pod("q", "", "", withHostPort("", 80, tcp))}, want: []string{reasonNodePorts}},
	})
}

func TestNodeResourcesFit(t *testing.T) {
	n := node("n", "2", "2Gi")
	full := node("n", "2", "2Gi", func(n *v1.Node) { n.Status.Allocatable[v1.ResourcePods] = resource.MustParse("1") })
	withInit := func(cpu string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}})
		}
	}
	gpu := func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	}
	runFilterCases(t, nodeResourcesFit, []filterCase{
		{name: "fits", pod: pod("p", "1", "1Gi"), node: n, pods: []*v1.Pod{pod("q", "1", "1Gi")}},
		{name: "best effort fits a full node", pod: pod("p", "", ""), node: n, pods: []*v1.Pod{pod("q", "2", "2Gi")}},
		{name: "cpu", pod: pod("p", "1500m", ""), node: n, pods: []*v1.Pod{pod("q", "1", "")}, want: []string{"Insufficient cpu"}},
		{name: "cpu and memory", pod: pod("p", "3", "3Gi"), node: n, want: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "too many pods", pod: pod("p", "", ""), node: full, pods: []*v1.Pod{pod("q", "", "")}, want: []string{reasonTooManyPods}},
		{name: "init container max rule", pod: pod("p", "500m", "", withInit("3")), node: n, want: []string{"Insufficient cpu"}},
		{name: "bound pod's init counts when largest", pod: pod("p", "1", ""), node: n,
			pods: []*v1.Pod{pod("q", "500m", "", withInit("2"))}, want: []string{"Insufficient cpu"}},
		{name: "init no larger than containers adds nothing", pod: pod("p", "1", ""), node: n,
			pods: []*v1.Pod{pod("q", "1", "", withInit("1"))}},
		{name: "extended resource", pod: pod("p", "", "", gpu), node: n, want: []string{"Insufficient example.com/gpu"}},
		{name: "ephemeral storage", node: n, pod: pod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceEphemeralStorage] = resource.MustParse("11Gi")
		}), want: []string{"Insufficient ephemeral-storage"}},
		// The RuntimeClass's overhead (spec.overhead) counts on top of
		// the containers', for the pod placed and for the pods bound.
		{name: "overhead of the pod", pod: pod("p", "1", "", withOverhead("1500m", "")), node: n, want: []string{"Insufficient cpu"}},
		{name: "overhead of a bound pod", pod: pod("p", "", "1Gi"), node: n,
			pods: []*v1.Pod{pod("q", "", "512Mi", withOverhead("", "1Gi"))}, want: []string{"Insufficient memory"}},
		{name: "overhead alone on a best-effort pod", pod: pod("p", "", "", withOverhead("3", "")), node: n, want: []string{"Insufficient cpu"}},
		{name: "overhead that fits", pod: pod("p", "1", "", withOverhead("500m", "")), node: n, pods: []*v1.Pod{pod("q", "500m", "")}},
	})
}

func TestInterPodAffinity(t *testing.T) {
	a, b := node("a", "1", "1Gi"), node("b", "1", "1Gi")
	web := pod("web", "", "", withPodLabels("app", "web"), onNode("b"))
	otherNode := []*nodeInfo{newNodeInfo(b, web)}
	exclusive := pod("x", "", "", withPodLabels("app", "db"), withAntiAffinity(hostnameTerm("app", "web")))
	runFilterCases(t, interPodAffinity, []filterCase{
		{name: "none", pod: pod("p", "", ""), node: a},
		{name: "affinity met", pod: pod("p", "", "", withAffinity(hostnameTerm("app", "web"))), node: a,
			pods: []*v1.Pod{pod("w", "", "", withPodLabels("app", "web"))}},
		{name: "affinity elsewhere only", pod: pod("p", "", "", withAffinity(hostnameTerm("app", "web"))), node: a,
			other: otherNode, want: []string{reasonAffinityNotMatch}},
		{name: "first of a self-affine group", node: a,
			pod: pod("p", "", "", withPodLabels("app", "web"), withAffinity(hostnameTerm("app", "web")))},
		{name: "no match anywhere, not self-affine", pod: pod("p", "", "", withAffinity(hostnameTerm("app", "web"))), node: a,
			want: []string{reasonAffinityNotMatch}},
		{name: "other namespace does not count", pod: pod("p", "", "", withAffinity(hostnameTerm("app", "web"))), node: a,
			pods: []*v1.Pod{pod("w", "", "", withPodLabels("app", "web"), func(p *v1.Pod) { p.Namespace = "other" })},
			want: []string{reasonAffinityNotMatch}},
		{name: "anti-affinity violated", pod: pod("p", "", "", withAntiAffinity(hostnameTerm("app", "web"))), node: a,
			pods: []*v1.Pod{pod("w", "", "", withPodLabels("app", "web"))}, want: []string{reasonAntiAffinityNotMatch}},
		{name: "anti-affinity, match on another node", pod: pod("p", "", "", withAntiAffinity(hostnameTerm("app", "web"))),
			node: a, other: otherNode},
		{name: "existing pod's anti-affinity", pod: pod("p", "", "", withPodLabels("app", "web")), node: a,
			pods: []*v1.Pod{exclusive}, want: []string{reasonExistingAntiAffinity}},
		{name: "existing pod's anti-affinity, other labels", pod: pod("p", "", "", withPodLabels("app", "api")), node: a,
			pods: []*v1.Pod{exclusive}},
	})
}

func TestFitErrorMessage(t *testing.T) {
	got := fitErrorMessage(3, map[string]int{
		"node(s) had untolerated taint {node.kubernetes.io/not-ready: }": 2,
		"Insufficient cpu": 1,
	})
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := fitErrorMessage(0, nil); got != noNodesAvailable {
		t.Errorf("no nodes: got %q", got)
	}
}

// TestSelectHostFailureHistogram: a node reports its first failing
// filter; NodeResourcesFit may report several reasons.
func TestSelectHostFailureHistogram(t *testing.T) {
	nodes := buildSnapshot([]*v1.Node{
		node("a", "1", "1Gi"),
		node("b", "2", "1Gi"),
		node("c", "8", "8Gi", notReady, withTaints(notReadyTaint)),
	}, nil)
	host, msg := selectHost(pod("big", "4", "2Gi"), nodes, nil, func(int) int { return 0 })
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu, 2 Insufficient memory."
	if host != "" || msg != want {
		t.Errorf("got %q %q\nwant %q", host, msg, want)
	}
}

// withOverhead sets spec.overhead, as the RuntimeClass admission does.
func withOverhead(cpu, mem string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Overhead = v1.ResourceList{}
		if cpu != "" {
			p.Spec.Overhead[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			p.Spec.Overhead[v1.ResourceMemory] = resource.MustParse(mem)
		}
	}
}
