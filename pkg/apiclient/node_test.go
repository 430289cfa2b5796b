package apiclient

import (
	"context"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	k8stesting "k8s.io/client-go/testing"
)

func newTestNode(t *testing.T, rt *fakeRuntime, clock *fakeClock) (*NodeStatus, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	n, err := NewNodeStatus(NodeConfig{
		Client: cs, NodeName: "node-a", NodeIP: "10.0.0.5", RootDir: t.TempDir(),
		Capacity: v1.ResourceList{v1.ResourceCPU: *resourceQ("2")}, Runtime: rt,
		KubeletVersion: "v0.1.0-test", Logger: discard, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, cs
}

func getNode(t *testing.T, cs *fake.Clientset) *v1.Node {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node
}

func condition(node *v1.Node, typ v1.NodeConditionType) v1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return v1.NodeCondition{}
}

func countActions(cs *fake.Clientset, verb, resource, sub string) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

func TestRegisterNode(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	n, cs := newTestNode(t, rt, newClock())
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, cs)
	for k, v := range map[string]string{"kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": goruntime.GOARCH} {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	wantAddr := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0] != wantAddr[0] || node.Status.Addresses[1] != wantAddr[1] {
		t.Errorf("addresses = %v, want %v", node.Status.Addresses, wantAddr)
	}
	if q := node.Status.Capacity[v1.ResourcePods]; q.Value() != 110 {
		t.Errorf("pods capacity = %s", q.String())
	}
	if q := node.Status.Allocatable[v1.ResourceEphemeralStorage]; q.Value() <= 0 {
		t.Errorf("ephemeral-storage = %s", q.String())
	}
	if q := node.Status.Capacity[v1.ResourceCPU]; q.Value() != 2 {
		t.Errorf("cpu = %s", q.String())
	}
	info := node.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://v2.1.0" || info.KubeletVersion != "v0.1.0-test" || info.OperatingSystem != "linux" || info.Architecture != goruntime.GOARCH {
		t.Errorf("nodeInfo = %+v", info)
	}
	want := map[v1.NodeConditionType][2]string{
		v1.NodeReady:          {"True", ReasonKubeletReady},
		v1.NodeMemoryPressure: {"False", ReasonSufficientMemory},
		v1.NodeDiskPressure:   {"False", ReasonNoDiskPressure},
		v1.NodePIDPressure:    {"False", ReasonSufficientPID},
	}
	for typ, w := range want {
		c := condition(node, typ)
		if string(c.Status) != w[0] || c.Reason != w[1] || c.Message == "" || c.LastHeartbeatTime.IsZero() {
			t.Errorf("condition %s = %+v, want %s/%s", typ, c, w[0], w[1])
		}
	}
	if c := condition(node, v1.NodeReady); c.Message != MessageKubeletReady {
		t.Errorf("Ready message = %q", c.Message)
	}
	if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 0 {
		t.Errorf("kubelet endpoint port = %d without a node API server", p)
	}
}

func TestNodeStatusReportsTheKubeletPort(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	n, cs := newTestNode(t, rt, newClock())
	n.SetKubeletPort(10250)
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := getNode(t, cs).Status.DaemonEndpoints.KubeletEndpoint.Port; p != 10250 {
		t.Errorf("status.daemonEndpoints.kubeletEndpoint.port = %d, want 10250", p)
	}
}

func TestNodeNotReadyWhenRuntimeIsNot(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rtReady, netOK  bool
		err             error
		wantMsgContains string
	}{
		{"network", true, false, nil, "NetworkReady=false reason:NetworkPluginNotReady"},
		{"runtime", false, true, nil, "RuntimeReady=false"},
		{"down", true, true, errDown, "container runtime is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeRuntime{}
			rt.set(tc.rtReady, tc.netOK, tc.err)
			clock := newClock()
			n, cs := newTestNode(t, rt, clock)
			if err := n.register(context.Background()); err != nil {
				t.Fatal(err)
			}
			c := condition(getNode(t, cs), v1.NodeReady)
			if c.Status != v1.ConditionFalse || c.Reason != ReasonKubeletNotReady || !strings.Contains(c.Message, tc.wantMsgContains) {
				t.Fatalf("Ready = %+v, want False/KubeletNotReady with %q", c, tc.wantMsgContains)
			}
			// The runtime recovers: Ready turns True at once (a change), with a new transition time.
			rt.set(true, true, nil)
			clock.Step(10 * time.Second)
			if err := n.sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			c2 := condition(getNode(t, cs), v1.NodeReady)
			if c2.Status != v1.ConditionTrue || c2.Reason != ReasonKubeletReady || !c2.LastTransitionTime.After(c.LastTransitionTime.Time) {
				t.Fatalf("Ready after recovery = %+v", c2)
			}
		})
	}
}

func TestNodeStatusReportFrequency(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	clock := newClock()
	n, cs := newTestNode(t, rt, clock)
	ctx := context.Background()
	if err := n.register(ctx); err != nil {
		t.Fatal(err)
	}
	updates := func() int { return countActions(cs, "patch", "nodes", "status") }
	base := updates()
	first := condition(getNode(t, cs), v1.NodeReady)
	for range 5 { // unchanged, within the report period: nothing sent
		clock.Step(10 * time.Second)
		if err := n.sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := updates(); got != base {
		t.Fatalf("unchanged status sent %d times within the report period", got-base)
	}
	clock.Step(DefaultNodeStatusReportFrequency)
	if err := n.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := updates(); got != base+1 {
		t.Fatalf("status not reported after the report period (%d updates)", got-base)
	}
	c := condition(getNode(t, cs), v1.NodeReady)
	if !c.LastHeartbeatTime.After(first.LastHeartbeatTime.Time) || !c.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("heartbeat %v (was %v), transition %v (was %v)", c.LastHeartbeatTime, first.LastHeartbeatTime, c.LastTransitionTime, first.LastTransitionTime)
	}
}

func TestRegisterExistingNodeAddsLabels(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	n, cs := newTestNode(t, rt, newClock())
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"role": "edge"}}}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, cs)
	if node.Labels["role"] != "edge" || node.Labels["kubernetes.io/hostname"] != "node-a" {
		t.Errorf("labels = %v", node.Labels)
	}
	if condition(node, v1.NodeReady).Status != v1.ConditionTrue {
		t.Errorf("status not reported for an existing node")
	}
}

func TestRegisterNodeWithLabelsMaxPodsAndReservations(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	cs := fake.NewClientset()
	n, err := NewNodeStatus(NodeConfig{
		Client: cs, NodeName: "node-a", RootDir: t.TempDir(), Runtime: rt, Logger: discard, Now: newClock().Now,
		Capacity: v1.ResourceList{v1.ResourceCPU: *resourceQ("2"), v1.ResourceMemory: *resourceQ("4Gi")},
		Labels:   map[string]string{"zone": "a", "kubernetes.io/hostname": "spoofed"},
		MaxPods:  20,
		Reserved: v1.ResourceList{v1.ResourceCPU: *resourceQ("500m"), v1.ResourceMemory: *resourceQ("5Gi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, cs)
	if node.Labels["zone"] != "a" || node.Labels["kubernetes.io/hostname"] != "node-a" {
		t.Errorf("labels = %v: want zone=a and the real hostname label", node.Labels)
	}
	capPods, allocPods := node.Status.Capacity[v1.ResourcePods], node.Status.Allocatable[v1.ResourcePods]
	if capPods.Value() != 20 || allocPods.Value() != 20 {
		t.Errorf("pods capacity/allocatable = %s/%s, want 20/20", &capPods, &allocPods)
	}
	cpu, mem := node.Status.Allocatable[v1.ResourceCPU], node.Status.Allocatable[v1.ResourceMemory]
	if cpu.MilliValue() != 1500 || mem.Value() != 0 {
		t.Errorf("allocatable cpu %s memory %s, want 1500m and 0 (reservation larger than capacity)", &cpu, &mem)
	}
	if c := node.Status.Capacity[v1.ResourceCPU]; c.Value() != 2 {
		t.Errorf("capacity cpu = %s, want 2 (reservations only lower allocatable)", &c)
	}
}

// With the agent owning the pod network, NetworkUnavailable is reported
// as the network says once it has something to say; otherwise it is not
// touched.
func TestNodeStatusNetworkCondition(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	clock := newClock()
	n, cs := newTestNode(t, rt, clock)
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := condition(getNode(t, cs), v1.NodeNetworkUnavailable); c.Type != "" {
		t.Fatalf("NetworkUnavailable without a network owner: %+v", c)
	}
	var synced bool
	unavailable := v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: "NoRouteCreated", Message: "waiting"}
	n.cfg.NetworkCondition = func() (v1.NodeCondition, bool) { return unavailable, synced }
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := condition(getNode(t, cs), v1.NodeNetworkUnavailable); c.Type != "" {
		t.Fatalf("NetworkUnavailable before the network's first sync: %+v", c)
	}
	synced = true
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := condition(getNode(t, cs), v1.NodeNetworkUnavailable); c.Status != v1.ConditionTrue || c.Reason != "NoRouteCreated" || c.Message != "waiting" {
		t.Fatalf("NetworkUnavailable = %+v", c)
	}
	unavailable = v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated"}
	clock.Step(time.Minute)
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	up := condition(getNode(t, cs), v1.NodeNetworkUnavailable)
	if up.Status != v1.ConditionFalse || up.Reason != "RouteCreated" {
		t.Fatalf("NetworkUnavailable after the network is up = %+v", up)
	}

	// The agent restarts: until its network's first sync the Node keeps
	// the condition it had (no True in between for the node lifecycle
	// controller to taint the node on).
	restarted, err := NewNodeStatus(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	restarted.cfg.NetworkCondition = func() (v1.NodeCondition, bool) {
		return v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: "NoRouteCreated", Message: "CNI config not written yet"}, false
	}
	clock.Step(time.Minute)
	if err := restarted.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := condition(getNode(t, cs), v1.NodeNetworkUnavailable); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Equal(&up.LastTransitionTime) {
		t.Fatalf("NetworkUnavailable after a restart, before the network's first sync = %+v; want it as it was: %+v", c, up)
	}
}

// With the pod workers' network gate, Ready is False with the gate's error
// even though the runtime reports its network ready (kubenet has no pod
// CIDR yet), as the kubelet's ReadyCondition reports networkErrors; and
// the runtime's own problems come first.
func TestNodeNotReadyWhileThePodNetworkIsNot(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	clock := newClock()
	n, cs := newTestNode(t, rt, clock)
	netErr := errors.New("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:" +
		"nodeagent: network plugin is not ready: kubenet does not have netConfig. This is most likely due to lack of PodCIDR")
	n.cfg.NetworkErr = func() error { return netErr }
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := condition(getNode(t, cs), v1.NodeReady)
	if c.Status != v1.ConditionFalse || c.Reason != ReasonKubeletNotReady || c.Message != netErr.Error() {
		t.Fatalf("Ready = %+v, want False/KubeletNotReady/%q", c, netErr)
	}

	rt.set(false, true, nil)
	clock.Step(10 * time.Second)
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	c = condition(getNode(t, cs), v1.NodeReady)
	if !strings.HasPrefix(c.Message, "[container runtime not ready: RuntimeReady=false") || !strings.HasSuffix(c.Message, netErr.Error()+"]") {
		t.Fatalf("Ready message %q, want the runtime's problem, then the network's", c.Message)
	}

	// The gate's word, not the runtime's NetworkReady, decides.
	rt.set(true, false, nil)
	netErr = nil
	clock.Step(10 * time.Second)
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c = condition(getNode(t, cs), v1.NodeReady); c.Status != v1.ConditionTrue || c.Message != MessageKubeletReady {
		t.Fatalf("Ready once the network gate is open = %+v", c)
	}
}

// TestRegisterNodeKeepsTaintAddedMeanwhile: the node lifecycle controller
// taints a new Node not-ready right after it is created, before the agent
// writes its first status. kube-apiserver's NodeRestriction refuses a node's
// write whose taints differ from the stored ones ("is not allowed to modify
// taints"), so the status must go as a patch of the status alone, and the
// taint stays.
func TestRegisterNodeKeepsTaintAddedMeanwhile(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	n, cs := newTestNode(t, rt, newClock())
	notReady := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	tainted := false
	cs.PrependReactor("*", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		stored, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", "node-a")
		if err != nil {
			return true, nil, err
		}
		node := stored.(*v1.Node)
		if !tainted { // the controller acts first
			tainted = true
			node.Spec.Taints = []v1.Taint{notReady}
			if err := cs.Tracker().Update(v1.SchemeGroupVersion.WithResource("nodes"), node, ""); err != nil {
				return true, nil, err
			}
		}
		if u, ok := action.(k8stesting.UpdateAction); ok {
			if !apiequality.Semantic.DeepEqual(u.GetObject().(*v1.Node).Spec.Taints, node.Spec.Taints) {
				return true, nil, apierrors.NewForbidden(v1.Resource("nodes"), "node-a", errors.New(`node "node-a" is not allowed to modify taints`))
			}
		}
		return false, nil, nil
	})
	if err := n.register(context.Background()); err != nil {
		t.Fatalf("register: %v", err)
	}
	node := getNode(t, cs)
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != v1.TaintNodeNotReady {
		t.Errorf("taints = %v, want the controller's %s", node.Spec.Taints, v1.TaintNodeNotReady)
	}
	if c := condition(node, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %q, want True", c.Status)
	}
}

// With no RootDir (localStorageCapacityIsolation: false) the node reports
// no ephemeral-storage, as upstream's MachineInfo setter.
func TestNodeWithoutLocalStorageCapacity(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	cs := fake.NewClientset()
	n, err := NewNodeStatus(NodeConfig{
		Client: cs, NodeName: "node-a", Capacity: v1.ResourceList{v1.ResourceCPU: *resourceQ("2")}, Runtime: rt,
		KubeletVersion: "v0.1.0-test", Logger: discard, Now: newClock().Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := getNode(t, cs).Status
	if _, ok := st.Capacity[v1.ResourceEphemeralStorage]; ok {
		t.Errorf("capacity has ephemeral-storage: %v", st.Capacity)
	}
	if _, ok := st.Allocatable[v1.ResourceEphemeralStorage]; ok {
		t.Errorf("allocatable has ephemeral-storage: %v", st.Allocatable)
	}
}

// Allocatable holds back the hard eviction thresholds as the kubelet's
// GetNodeAllocatableReservation: memory.available of memory, nodefs.available
// (a percentage of capacity here, in float32 as upstream) of
// ephemeral-storage; soft thresholds
// reserve nothing.
func TestAllocatableReservationWithEvictionThresholds(t *testing.T) {
	ts, err := eviction.Parse(eviction.Config{
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "pid.available": "5%"},
		EvictionSoft: map[string]string{"memory.available": "1Gi"}, EvictionSoftGracePeriod: map[string]string{"memory.available": "1m"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	capacity := v1.ResourceList{v1.ResourceMemory: *resourceQ("4Gi"), v1.ResourceEphemeralStorage: *resourceQ("100Gi"), v1.ResourceCPU: *resourceQ("2")}
	reserved := v1.ResourceList{v1.ResourceMemory: *resourceQ("1Gi")}
	got := Allocatable(capacity, AllocatableReservation(capacity, reserved, ts))
	for name, want := range map[v1.ResourceName]string{v1.ResourceMemory: "2972Mi", v1.ResourceEphemeralStorage: "96636764000", v1.ResourceCPU: "2"} {
		if q := got[name]; q.Cmp(*resourceQ(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, &q, want)
		}
	}
	if q := reserved[v1.ResourceMemory]; q.Cmp(*resourceQ("1Gi")) != 0 {
		t.Errorf("the reserved list was changed: %s", &q)
	}
}
