package podworker

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func reqPod(name string, cpu, mem string) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	c := v1.Container{Name: "c", Image: "busybox:1"}
	if cpu != "" || mem != "" {
		c.Resources.Requests = v1.ResourceList{}
	}
	if cpu != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p.Spec.Containers = []v1.Container{c}
	return p
}

func withPorts(p *v1.Pod, ports ...v1.ContainerPort) *v1.Pod {
	p.Spec.Containers[0].Ports = ports
	return p
}

func TestComputePodRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	ctr := func(cpu, mem string) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}
	}
	sidecar := func(cpu, mem string) v1.Container {
		c := ctr(cpu, mem)
		c.RestartPolicy = &always
		return c
	}
	tests := []struct {
		name      string
		init, app []v1.Container
		overhead  v1.ResourceList
		want      podRequests
	}{
		{name: "none", want: podRequests{}},
		{name: "apps add up", app: []v1.Container{ctr("100m", "10Mi"), ctr("200m", "20Mi")},
			want: podRequests{MilliCPU: 300, Memory: 30 << 20}},
		{name: "init max wins", init: []v1.Container{ctr("1", "5Mi"), ctr("500m", "50Mi")}, app: []v1.Container{ctr("100m", "10Mi"), ctr("200m", "20Mi")},
			want: podRequests{MilliCPU: 1000, Memory: 50 << 20}},
		{name: "app sum wins", init: []v1.Container{ctr("100m", "1Mi")}, app: []v1.Container{ctr("100m", "10Mi"), ctr("200m", "20Mi")},
			want: podRequests{MilliCPU: 300, Memory: 30 << 20}},
		{name: "sidecar adds to apps and later inits", init: []v1.Container{sidecar("100m", "10Mi"), ctr("1", "1Mi")}, app: []v1.Container{ctr("200m", "20Mi")},
			want: podRequests{MilliCPU: 1100, Memory: 30 << 20}},
		{name: "overhead", app: []v1.Container{ctr("100m", "10Mi")}, overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")},
			want: podRequests{MilliCPU: 150, Memory: 10 << 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.app, Overhead: tc.overhead}}
			if got := computePodRequests(p); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAdmitPod(t *testing.T) {
	node := NodeInfo{
		Name:   "node1",
		Labels: defaultNodeLabels("node1", map[string]string{"disk": "ssd"}),
		Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3"),
		},
	}
	affinity := func(op v1.NodeSelectorOperator, key string, values ...string) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}}}}
	}
	fieldAffinity := func(name string) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}}}
	}
	mod := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod { f(p); return p }
	port := func(hp int32, ip string, proto v1.Protocol) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostPort: hp, HostIP: ip, Protocol: proto}
	}
	const affinityMsg = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	tests := []struct {
		name        string
		pod         *v1.Pod
		admitted    []*v1.Pod
		reason, msg string
	}{
		{name: "fits", pod: reqPod("a", "1", "512Mi"), admitted: []*v1.Pod{reqPod("b", "1", "512Mi")}},
		{name: "best effort fits a full node", pod: reqPod("a", "", ""), admitted: []*v1.Pod{reqPod("b", "2", "1Gi")}},
		{name: "out of cpu", pod: reqPod("a", "1000", ""), reason: "OutOfcpu",
			msg: "Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: 2000"},
		{name: "out of cpu with used", pod: reqPod("a", "1500m", ""), admitted: []*v1.Pod{reqPod("b", "600m", "")}, reason: "OutOfcpu",
			msg: "Node didn't have enough resource: cpu, requested: 1500, used: 600, capacity: 2000"},
		{name: "out of memory", pod: reqPod("a", "", "1Gi"), admitted: []*v1.Pod{reqPod("b", "", "1")}, reason: "OutOfmemory",
			msg: "Node didn't have enough resource: memory, requested: 1073741824, used: 1, capacity: 1073741824"},
		{name: "out of pods first", pod: reqPod("a", "1000", ""), admitted: []*v1.Pod{reqPod("b", "", ""), reqPod("c", "", ""), reqPod("d", "", "")},
			reason: "OutOfpods", msg: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "node selector matches", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd", v1.LabelHostname: "node1"} })},
		{name: "node selector mismatch", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			reason: "NodeAffinity", msg: affinityMsg},
		{name: "affinity matches", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.Affinity = affinity(v1.NodeSelectorOpIn, "disk", "nvme", "ssd") })},
		{name: "affinity mismatch", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.Affinity = affinity(v1.NodeSelectorOpDoesNotExist, "disk") }),
			reason: "NodeAffinity", msg: affinityMsg},
		{name: "affinity on node name field", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.Affinity = fieldAffinity("node1") })},
		{name: "affinity on other node name", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.Affinity = fieldAffinity("node2") }),
			reason: "NodeAffinity", msg: affinityMsg},
		{name: "bound to another node", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) { p.Spec.NodeName = "node2" }),
			reason: "NodeName", msg: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "host port conflict", pod: withPorts(reqPod("a", "", ""), port(8080, "", "")),
			admitted: []*v1.Pod{withPorts(reqPod("b", "", ""), port(8080, "", v1.ProtocolTCP))},
			reason:   "NodePorts", msg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port wildcard conflicts with specific ip", pod: withPorts(reqPod("a", "", ""), port(8080, "10.0.0.1", "")),
			admitted: []*v1.Pod{withPorts(reqPod("b", "", ""), port(8080, "", ""))}, reason: "NodePorts",
			msg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port other protocol", pod: withPorts(reqPod("a", "", ""), port(8080, "", v1.ProtocolUDP)),
			admitted: []*v1.Pod{withPorts(reqPod("b", "", ""), port(8080, "", ""))}},
		{name: "host port other ip", pod: withPorts(reqPod("a", "", ""), port(8080, "10.0.0.1", "")),
			admitted: []*v1.Pod{withPorts(reqPod("b", "", ""), port(8080, "10.0.0.2", ""))}},
		{name: "container port without host port", pod: withPorts(reqPod("a", "", ""), port(0, "", "")),
			admitted: []*v1.Pod{withPorts(reqPod("b", "", ""), port(0, "", ""))}},
		{name: "resources reported before affinity", pod: mod(reqPod("a", "3", ""), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "static pod: the general filter applies (preemption aside)", pod: mod(reqPod("a", "1000", ""), func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
		}), reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: 2000"},
		{name: "static pod: node selector", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
		}), reason: "NodeAffinity", msg: affinityMsg},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := AdmitPod(tc.pod, tc.admitted, node)
			if r.Admit != (tc.reason == "") || r.Reason != tc.reason || r.Message != tc.msg {
				t.Errorf("got %+v, want reason %q message %q", r, tc.reason, tc.msg)
			}
		})
	}
	// Without allocatable nothing is counted.
	if r := AdmitPod(reqPod("a", "1000", "1Ti"), nil, NodeInfo{Name: "node1"}); !r.Admit {
		t.Errorf("no allocatable: %+v", r)
	}
}

// ephemeral-storage is counted as upstream's Fits: against allocatable,
// none when the node reports none (localStorageCapacityIsolation false).
func TestAdmitPodEphemeralStorage(t *testing.T) {
	storagePod := func(name, q string) *v1.Pod {
		p := reqPod(name, "", "")
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}
		return p
	}
	node := NodeInfo{Name: "node1", Labels: defaultNodeLabels("node1", nil),
		Allocatable: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")}}
	if r := AdmitPod(storagePod("a", "6Mi"), []*v1.Pod{storagePod("b", "4Mi")}, node); !r.Admit {
		t.Errorf("fits: %+v", r)
	}
	r := AdmitPod(storagePod("a", "7Mi"), []*v1.Pod{storagePod("b", "4Mi")}, node)
	const msg = "Node didn't have enough resource: ephemeral-storage, requested: 7340032, used: 4194304, capacity: 10485760"
	if r.Admit || r.Reason != "OutOfephemeral-storage" || r.Message != msg {
		t.Errorf("over: %+v", r)
	}
	r = AdmitPod(storagePod("a", "1"), nil, NodeInfo{Name: "node1", Labels: node.Labels})
	if r.Admit || r.Reason != "OutOfephemeral-storage" {
		t.Errorf("none reported: %+v", r)
	}
}

// foreignOS is an OS the tests never run on.
func foreignOS() string {
	if goruntime.GOOS == "windows" {
		return "linux"
	}
	return "windows"
}

// The OS checks come first, before the predicates, and apply to static
// pods too; the node's kubernetes.io/os label is not what counts, the OS
// the agent runs on is (upstream puts it in the label's place).
func TestAdmitPodOS(t *testing.T) {
	const (
		selectorMsg = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
		fieldMsg    = "Failed to admit pod as the OS field doesn't match node OS"
	)
	other := foreignOS()
	mod := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod { f(p); return p }
	withOS := func(p *v1.Pod, name string) *v1.Pod { p.Spec.OS = &v1.PodOS{Name: v1.OSName(name)}; return p }
	withLabel := func(p *v1.Pod, os string) *v1.Pod {
		p.Labels = map[string]string{v1.LabelOSStable: os}
		return p
	}
	static := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		return p
	}
	node := NodeInfo{Name: "node1", Labels: defaultNodeLabels("node1", nil),
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
	labelled := func(os string) NodeInfo {
		n := node
		n.Labels = defaultNodeLabels("node1", map[string]string{v1.LabelOSStable: os})
		return n
	}
	tests := []struct {
		name        string
		pod         *v1.Pod
		node        NodeInfo
		reason, msg string
	}{
		{name: "os field matches", pod: withOS(reqPod("a", "", ""), goruntime.GOOS), node: node},
		{name: "os field foreign", pod: withOS(reqPod("a", "", ""), other), node: node,
			reason: "PodOSNotSupported", msg: fieldMsg},
		{name: "os label matches", pod: withLabel(reqPod("a", "", ""), goruntime.GOOS), node: node},
		{name: "os label foreign", pod: withLabel(reqPod("a", "", ""), other), node: node,
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: selectorMsg},
		{name: "label checked before field", pod: withOS(withLabel(reqPod("a", "", ""), other), other), node: node,
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: selectorMsg},
		{name: "node label says another os: the running one counts", pod: withOS(withLabel(reqPod("a", "", ""), goruntime.GOOS), goruntime.GOOS),
			node: labelled(other)},
		{name: "node label says another os, pod label too", pod: withLabel(reqPod("a", "", ""), other), node: labelled(other),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: selectorMsg},
		{name: "node selector on the os label is the affinity check", pod: mod(reqPod("a", "", ""), func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1.LabelOSStable: other}
		}), node: node, reason: "NodeAffinity", msg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "os before resources", pod: withOS(reqPod("a", "1000", ""), other), node: node,
			reason: "PodOSNotSupported", msg: fieldMsg},
		{name: "static pod foreign os field", pod: static(withOS(reqPod("a", "1000", ""), other)), node: node,
			reason: "PodOSNotSupported", msg: fieldMsg},
		{name: "static pod foreign os label", pod: static(withLabel(reqPod("a", "", ""), other)), node: node,
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: selectorMsg},
		{name: "static pod of this os", pod: static(withOS(reqPod("a", "1", ""), goruntime.GOOS)), node: node},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := AdmitPod(tc.pod, nil, tc.node)
			if r.Admit != (tc.reason == "") || r.Reason != tc.reason || r.Message != tc.msg {
				t.Errorf("got %+v, want reason %q message %q", r, tc.reason, tc.msg)
			}
		})
	}
}

// A static pod for another OS is rejected as an API pod is: a warning
// event, a Failed status with the "Pod was rejected: " prefix, nothing
// created in the runtime. The API server is away meanwhile, and the other
// static pod runs all the same.
func TestManagerRejectsStaticPodOfForeignOS(t *testing.T) {
	ev := &recordedEvents{}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.events = ev
	// The API server is away: the static pods are admitted against the
	// local node.
	h.m.cfg.Node = func(context.Context, bool) (*v1.Node, error) { return nil, fmt.Errorf("connection refused") }
	statuses := &statusLog{}
	h.m.cfg.OnStatus = statuses.record
	h.start(t)

	win := scenarioPod("win", "busybox:1")
	win.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	win.Spec.OS = &v1.PodOS{Name: v1.OSName(foreignOS())}
	local := scenarioPod("local", "busybox:1")
	local.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	h.pods <- []*v1.Pod{win, local}
	eventually(t, "local running", func() (bool, string) { return allRunning(h.pod(local.UID)) })
	const wantMsg = "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"
	p := waitPhase(t, h, win.UID, v1.PodFailed)
	if p.Status.Reason != "PodOSNotSupported" || p.Status.Message != wantMsg {
		t.Errorf("win status = %s %q", p.Status.Reason, p.Status.Message)
	}
	h.rt.Lock()
	for _, sb := range h.rt.Sandboxes {
		if sb.Metadata.Uid == string(win.UID) {
			t.Errorf("sandbox created for the rejected pod: %s", sb.Id)
		}
	}
	h.rt.Unlock()
	if got := statuses.of("win"); len(got) != 1 || got[0].Reason != "PodOSNotSupported" || got[0].Message != wantMsg {
		t.Errorf("OnStatus for win = %+v, want one Failed/PodOSNotSupported", got)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if n := count(ev.reasons, "PodOSNotSupported"); n != 1 {
		t.Errorf("events = %v, want one PodOSNotSupported", ev.reasons)
	}
}

// A pod that fits runs; one asking for more cpu than the node has is
// rejected without touching the runtime, and stays rejected.
func TestManagerRejectsPodOutOfCPU(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110"),
	}
	statuses := &statusLog{}
	h.m.cfg.OnStatus = statuses.record
	h.start(t)

	fits := scenarioPod("fits", "busybox:1")
	fits.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
	h.pods <- []*v1.Pod{fits}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(fits.UID)) })

	big := scenarioPod("big", "busybox:1")
	big.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000")}
	const wantMsg = "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: 500, capacity: 2000"
	check := func() {
		t.Helper()
		eventually(t, "big rejected", func() (bool, string) {
			p := h.pod(big.UID)
			if p == nil {
				return false, "not listed"
			}
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == "OutOfcpu" && p.Status.Message == wantMsg,
				fmt.Sprintf("%+v", p.Status)
		})
	}
	h.pods <- []*v1.Pod{fits, big}
	check()
	h.pods <- []*v1.Pod{fits, big} // stays rejected, no second report
	h.pods <- []*v1.Pod{fits, big} // received only once the previous set was handled
	check()
	if ok, detail := allRunning(h.pod(fits.UID)); !ok {
		t.Errorf("fits: %s", detail)
	}

	calls := h.rt.GetCalls()
	if n := count(calls, "RunPodSandbox"); n != 1 {
		t.Errorf("RunPodSandbox calls = %d, want 1 (only for fits): %v", n, calls)
	}
	h.rt.Lock()
	for _, sb := range h.rt.Sandboxes {
		if sb.Metadata.Uid == string(big.UID) {
			t.Errorf("sandbox created for the rejected pod: %s", sb.Id)
		}
	}
	for _, c := range h.rt.Containers {
		if c.SandboxID != "" && c.Labels["io.kubernetes.pod.uid"] == string(big.UID) {
			t.Errorf("container created for the rejected pod: %s", c.Id)
		}
	}
	h.rt.Unlock()

	if got := statuses.of("big"); len(got) != 1 || got[0].Phase != v1.PodFailed || got[0].Reason != "OutOfcpu" || got[0].Message != wantMsg {
		t.Errorf("OnStatus for big = %+v, want one Failed/OutOfcpu", got)
	}
}

// The kubelet checks NoExecute taints only; NoSchedule is the scheduler's.
func TestAdmitPodTaints(t *testing.T) {
	noExec := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}
	noSched := v1.Taint{Key: "gpu", Value: "yes", Effect: v1.TaintEffectNoSchedule}
	node := NodeInfo{Name: "node1", Labels: defaultNodeLabels("node1", nil)}
	tolerate := func(p *v1.Pod, key string, effect v1.TaintEffect) *v1.Pod {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect})
		return p
	}
	static := reqPod("s", "", "")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	const msg = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
	tests := []struct {
		name   string
		taints []v1.Taint
		pod    *v1.Pod
		reject bool
	}{
		{name: "no taints", pod: reqPod("a", "", "")},
		{name: "untolerated NoSchedule is the scheduler's", taints: []v1.Taint{noSched}, pod: reqPod("a", "", "")},
		{name: "untolerated NoExecute", taints: []v1.Taint{noSched, noExec}, pod: reqPod("a", "", ""), reject: true},
		{name: "tolerated NoExecute", taints: []v1.Taint{noExec}, pod: tolerate(reqPod("a", "", ""), "dedicated", v1.TaintEffectNoExecute)},
		{name: "toleration of another effect", taints: []v1.Taint{noExec}, pod: tolerate(reqPod("a", "", ""), "dedicated", v1.TaintEffectNoSchedule), reject: true},
		{name: "static pod", taints: []v1.Taint{noExec}, pod: static},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := node
			n.Taints = tc.taints
			r := AdmitPod(tc.pod, nil, n)
			if tc.reject && (r.Admit || r.Reason != "TaintToleration" || r.Message != msg) {
				t.Errorf("got %+v, want TaintToleration %q", r, msg)
			}
			if !tc.reject && !r.Admit {
				t.Errorf("rejected: %+v", r)
			}
		})
	}
	// Taints come after the general predicates, as upstream reports them.
	p := reqPod("a", "", "")
	p.Spec.NodeName = "node2"
	n := node
	n.Taints = []v1.Taint{noExec}
	if r := AdmitPod(p, nil, n); r.Reason != "NodeName" {
		t.Errorf("first failure = %+v, want NodeName", r)
	}
}

// fakeNode is a Config.Node: cached is what the watch holds, api what the
// API server answers to a fresh read.
type fakeNode struct {
	mu          sync.Mutex
	cached, api *v1.Node
	err         error
	freshReads  int
}

func (f *fakeNode) get(_ context.Context, fresh bool) (*v1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if fresh {
		f.freshReads++
		return f.api, nil
	}
	return f.cached, nil
}

func apiNode(labels map[string]string, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{}
	n.Name, n.Labels, n.Spec.Taints = "node1", defaultNodeLabels("node1", labels), taints
	return n
}

// waitPhase waits until the manager lists the pod with that phase.
func waitPhase(t *testing.T, h *harness, uid types.UID, phase v1.PodPhase) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	eventually(t, string(uid)+" "+string(phase), func() (bool, string) {
		got = h.pod(uid)
		if got == nil {
			return false, "not listed"
		}
		return got.Status.Phase == phase, fmt.Sprintf("%s %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
	})
	return got
}

// With a Node provider, admission uses the API's labels and taints, not
// the local ones.
func TestManagerAdmitsWithAPINode(t *testing.T) {
	node := &fakeNode{cached: apiNode(map[string]string{"disk": "ssd"},
		v1.Taint{Key: "maintenance", Effect: v1.TaintEffectNoExecute})}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Node = node.get
	h.start(t)

	selected := scenarioPod("selected", "busybox:1")
	selected.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	selected.Spec.Tolerations = []v1.Toleration{{Key: "maintenance", Operator: v1.TolerationOpExists}}
	intolerant := scenarioPod("intolerant", "busybox:1")
	h.pods <- []*v1.Pod{selected, intolerant}
	eventually(t, "selected running", func() (bool, string) { return allRunning(h.pod(selected.UID)) })
	got := waitPhase(t, h, intolerant.UID, v1.PodFailed)
	if got.Status.Reason != "TaintToleration" {
		t.Errorf("intolerant: reason %q, want TaintToleration", got.Status.Reason)
	}
	node.mu.Lock()
	defer node.mu.Unlock()
	if node.freshReads != 0 {
		t.Errorf("fresh reads = %d; only a node affinity failure reads the node again", node.freshReads)
	}
}

// A pod whose node affinity alone fails is checked again against the
// API server's Node: the watch may not have the label added just before.
func TestManagerRereadsNodeOnAffinityFailure(t *testing.T) {
	node := &fakeNode{cached: apiNode(nil), api: apiNode(map[string]string{"zone": "a"})}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Node = node.get
	h.start(t)
	pod := scenarioPod("zoned", "busybox:1")
	pod.Spec.NodeSelector = map[string]string{"zone": "a"}
	other := scenarioPod("elsewhere", "busybox:1")
	other.Spec.NodeSelector = map[string]string{"zone": "b"}
	h.pods <- []*v1.Pod{pod, other}
	eventually(t, "zoned running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	if got := waitPhase(t, h, other.UID, v1.PodFailed); got.Status.Reason != "NodeAffinity" {
		t.Errorf("elsewhere: reason %q", got.Status.Reason)
	}
	node.mu.Lock()
	defer node.mu.Unlock()
	if node.freshReads != 2 {
		t.Errorf("fresh reads = %d, want 2", node.freshReads)
	}
}

// When the Node cannot be read, admission falls back to the local labels.
func TestManagerNodeUnavailableUsesLocalLabels(t *testing.T) {
	node := &fakeNode{err: fmt.Errorf("apiserver down")}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.cfg.Node = node.get
	h.m.cfg.NodeLabels = defaultNodeLabels("node1", map[string]string{"local": "yes"})
	h.start(t)
	pod := scenarioPod("local", "busybox:1")
	pod.Spec.NodeSelector = map[string]string{"local": "yes"}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
}

// Sysctls outside the safe set and allowedUnsafeSysctls are refused at
// admission, for static pods too, with the kubelet's reason and message;
// an allowed unsafe one (here by wildcard) runs.
func TestManagerRejectsForbiddenSysctls(t *testing.T) {
	ev := &recordedEvents{}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.events = ev
	allowed, err := newSysctlAllowlist(Config{Logger: h.m.log, AllowedUnsafeSysctls: []string{"kernel.msg*"}})
	if err != nil {
		t.Fatal(err)
	}
	h.m.sysctls = allowed
	statuses := &statusLog{}
	h.m.cfg.OnStatus = statuses.record
	h.start(t)

	withSysctl := func(name, sysctl string, static bool) *v1.Pod {
		p := scenarioPod(name, "busybox:1")
		if static {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		}
		p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: sysctl, Value: "1"}}}
		return p
	}
	safe := withSysctl("safe", "net.ipv4.ping_group_range", false)
	unsafe := withSysctl("unsafe", "kernel.msgmax", true)
	forbidden := withSysctl("forbidden", "net.core.somaxconn", true)
	h.pods <- []*v1.Pod{safe, unsafe, forbidden}
	eventually(t, "safe and allowed unsafe running", func() (bool, string) {
		if ok, d := allRunning(h.pod(safe.UID)); !ok {
			return false, d
		}
		return allRunning(h.pod(unsafe.UID))
	})
	const wantMsg = `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted`
	p := waitPhase(t, h, forbidden.UID, v1.PodFailed)
	if p.Status.Reason != "SysctlForbidden" || p.Status.Message != wantMsg {
		t.Errorf("forbidden status = %s %q", p.Status.Reason, p.Status.Message)
	}
	if got := statuses.of("forbidden"); len(got) != 1 || got[0].Reason != "SysctlForbidden" || got[0].Message != wantMsg {
		t.Errorf("OnStatus for forbidden = %+v", got)
	}
	h.rt.Lock()
	for _, sb := range h.rt.Sandboxes {
		if sb.Metadata.Uid == string(forbidden.UID) {
			t.Errorf("sandbox created for the rejected pod: %s", sb.Id)
		}
	}
	h.rt.Unlock()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if n := count(ev.reasons, "SysctlForbidden"); n != 1 {
		t.Errorf("events = %v, want one SysctlForbidden", ev.reasons)
	}
}

func TestCheckSysctlsHostNamespaces(t *testing.T) {
	allowed, err := newSysctlAllowlist(Config{Logger: slog.Default(), AllowedUnsafeSysctls: []string{"net.core.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sysctl           string
		hostNet, hostIPC bool
		msg              string
	}{
		{"net.core.somaxconn", false, false, ""},
		{"net.core.somaxconn", true, false, `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{"kernel.shm_rmid_forced", false, true, `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"kernel.shm_rmid_forced", true, false, ""},
		{"vm.swappiness", false, false, `forbidden sysctl: "vm.swappiness" not allowlisted`},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNet, HostIPC: tc.hostIPC,
			SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: tc.sysctl, Value: "1"}}}}}
		r := checkSysctls(pod, allowed)
		if r.Admit != (tc.msg == "") || r.Message != tc.msg || (tc.msg != "" && r.Reason != "SysctlForbidden") {
			t.Errorf("%s hostNetwork=%v hostIPC=%v: %+v, want %q", tc.sysctl, tc.hostNet, tc.hostIPC, r, tc.msg)
		}
	}
	if _, err := newSysctlAllowlist(Config{Logger: slog.Default(), AllowedUnsafeSysctls: []string{"vm.*"}}); err == nil {
		t.Error("an allowlist with a sysctl not known to be namespaced was built")
	}
}
