package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func node(name string, heartbeat time.Time) (*v1.Node, *coordinationv1.Lease) {
	hb := metav1.NewTime(heartbeat)
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(heartbeat.Add(-time.Hour))},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: hb, LastTransitionTime: hb},
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb},
		}}}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: heartbeat}}}
	return n, l
}

func pod(name, node string, tolerations ...v1.Toleration) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   v1.PodSpec{NodeName: node, Tolerations: tolerations},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}}
}

func renew(t *testing.T, client kubernetes.Interface, name string, at time.Time) {
	t.Helper()
	l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: at}
	if _, err := client.CoordinationV1().Leases(LeaseNamespace).Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func taintKeys(n *v1.Node) map[string]bool {
	m := map[string]bool{}
	for _, t := range n.Spec.Taints {
		m[t.Key+":"+string(t.Effect)] = true
	}
	return m
}

func start(t *testing.T, clk *clock, objs ...runtime.Object) (kubernetes.Interface, *Controller) {
	client := ctrltest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, Config{GracePeriod: 40 * time.Second, MonitorPeriod: 20 * time.Millisecond, Now: clk.Now}, ctrltest.Logger(t))
	ctrltest.Start(t, f, c.Run)
	return client, c
}

// TestUnreachableNodeScenario: a silent node turns Unknown and tainted,
// its pods are evicted by their tolerations, and the taints go when it
// reports again.
func TestUnreachableNodeScenario(t *testing.T) {
	clk := &clock{now: time.Now()}
	n1, l1 := node("n1", clk.Now())
	n2, l2 := node("n2", clk.Now().Add(-2*time.Minute))
	secs := int64(300)
	client, c := start(t, clk, n1, l1, n2, l2,
		pod("plain", "n2"),
		pod("tolerates-300", "n2", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}),
		pod("tolerates-all", "n2", v1.Toleration{Operator: v1.TolerationOpExists}),
		pod("healthy-node", "n1"))
	pods := func(ctx context.Context) map[string]*v1.Pod {
		l, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		m := map[string]*v1.Pod{}
		for i := range l.Items {
			m[l.Items[i].Name] = &l.Items[i]
		}
		return m
	}
	ctrltest.Eventually(t, "n2 unknown and tainted, intolerant pod evicted", func(ctx context.Context) (bool, string) {
		n, _ := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
		ready := n.Status.Conditions[0]
		taints := taintKeys(n)
		ps := pods(ctx)
		ok := ready.Status == v1.ConditionUnknown && ready.Reason == "NodeStatusUnknown" && ready.Message == "Kubelet stopped posting node status." &&
			n.Status.Conditions[1].Status == v1.ConditionUnknown &&
			taints["node.kubernetes.io/unreachable:NoExecute"] && taints["node.kubernetes.io/unreachable:NoSchedule"] &&
			ps["plain"] == nil && ps["tolerates-300"] != nil && ps["tolerates-all"] != nil && ps["healthy-node"] != nil
		return ok, fmt.Sprintf("ready %+v taints %v pods %d", ready, taints, len(ps))
	})
	ctrltest.Eventually(t, "events as upstream's", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		for _, want := range []string{
			"Node n1 Normal RegisteredNode: Node n1 event: Registered Node n1 in Controller [node-controller]",
			"Node n2 Normal RegisteredNode: Node n2 event: Registered Node n2 in Controller [node-controller]",
			"Node n2 Normal NodeNotReady: Node n2 status is now: NodeNotReady [node-controller]",
			"Pod tolerates-300 Warning NodeNotReady: Node is not ready [node-controller]",
			"Pod plain Normal TaintManagerEviction: Marking for deletion Pod default/plain [taint-eviction-controller]",
		} {
			if !slices.Contains(ev, want) {
				return false, fmt.Sprintf("no %q in %q", want, ev)
			}
		}
		return true, ""
	})
	if p := pods(t.Context())["tolerates-300"]; p.Status.Conditions[0].Status != v1.ConditionFalse {
		t.Errorf("pod on the silent node still Ready: %+v", p.Status.Conditions)
	}
	n1Now, _ := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	if len(n1Now.Spec.Taints) != 0 {
		t.Errorf("healthy node tainted: %v", n1Now.Spec.Taints)
	}

	// n1 keeps renewing its lease while the clock moves past 300s.
	renew(t, client, "n1", clk.Now().Add(301*time.Second))
	ctrltest.Eventually(t, "lease renewal seen", func(ctx context.Context) (bool, string) {
		l, err := c.leaseLister.Leases(LeaseNamespace).Get("n1")
		return err == nil && l.Spec.RenewTime.After(clk.Now()), ""
	})
	clk.Step(301 * time.Second)
	ctrltest.Eventually(t, "evicted after tolerationSeconds", func(ctx context.Context) (bool, string) {
		ps := pods(ctx)
		return ps["tolerates-300"] == nil && ps["tolerates-all"] != nil && ps["healthy-node"] != nil, fmt.Sprint(len(ps))
	})

	// n2 reports again: Ready, taints removed.
	n, _ := client.CoreV1().Nodes().Get(t.Context(), "n2", metav1.GetOptions{})
	n.Status.Conditions[0] = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(clk.Now())}
	if _, err := client.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	renew(t, client, "n2", clk.Now())
	ctrltest.Eventually(t, "taints removed", func(ctx context.Context) (bool, string) {
		n, _ := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
		return len(n.Spec.Taints) == 0, fmt.Sprint(n.Spec.Taints)
	})

	// A deleted node is reported once.
	if err := client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrltest.Eventually(t, "RemovingNode event", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		return slices.Contains(ev, "Node n1 Normal RemovingNode: Node n1 event: Removing Node n1 from Controller [node-controller]"), fmt.Sprint(ev)
	})
}

// TestAllNodesDown: the only node going silent gets NoSchedule but not
// NoExecute (upstream's master disruption mode), so no pod is evicted.
func TestAllNodesDown(t *testing.T) {
	clk := &clock{now: time.Now()}
	n1, l1 := node("n1", clk.Now().Add(-time.Minute))
	client, _ := start(t, clk, n1, l1, pod("p", "n1"))
	ctrltest.Eventually(t, "n1 unknown, NoSchedule only", func(ctx context.Context) (bool, string) {
		n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		taints := taintKeys(n)
		return n.Status.Conditions[0].Status == v1.ConditionUnknown && taints["node.kubernetes.io/unreachable:NoSchedule"] &&
			len(taints) == 1, fmt.Sprint(taints)
	})
	if _, err := client.CoreV1().Pods("default").Get(t.Context(), "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod evicted while every node is down: %v", err)
	}
}

func TestTolerationWait(t *testing.T) {
	unreachable := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	s60, s300 := int64(60), int64(300)
	for name, tc := range map[string]struct {
		tols  []v1.Toleration
		wait  time.Duration
		evict bool
	}{
		"none":    {nil, 0, true},
		"forever": {[]v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists}}, 0, false},
		"min": {[]v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, TolerationSeconds: &s300},
			{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s60}}, time.Minute, true},
		"other key": {[]v1.Toleration{{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists}}, 0, true},
	} {
		wait, evict := tolerationWait(tc.tols, []v1.Taint{unreachable})
		if wait != tc.wait || evict != tc.evict {
			t.Errorf("%s: got %v/%v, want %v/%v", name, wait, evict, tc.wait, tc.evict)
		}
	}
}
