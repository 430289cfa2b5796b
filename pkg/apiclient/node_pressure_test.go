package apiclient

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The pressure conditions follow the eviction manager's set, with the
// kubelet's reasons and messages, and a transition time that moves only
// when the status does.
func TestNodeStatusReportsPressure(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	clock := newClock()
	n, cs := newTestNode(t, rt, clock)
	var mu sync.Mutex
	var active []v1.NodeConditionType
	n.SetPressure(func() []v1.NodeConditionType { mu.Lock(); defer mu.Unlock(); return active })
	ctx := context.Background()
	if err := n.register(ctx); err != nil {
		t.Fatal(err)
	}
	start := condition(getNode(t, cs), v1.NodeMemoryPressure).LastTransitionTime

	mu.Lock()
	active = []v1.NodeConditionType{v1.NodeMemoryPressure}
	mu.Unlock()
	clock.Step(time.Minute)
	if err := n.sync(ctx); err != nil {
		t.Fatal(err)
	}
	node := getNode(t, cs)
	c := condition(node, v1.NodeMemoryPressure)
	if c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" {
		t.Errorf("MemoryPressure %+v", c)
	}
	if !c.LastTransitionTime.After(start.Time) {
		t.Errorf("transition time %v did not move from %v", c.LastTransitionTime, start)
	}
	if d := condition(node, v1.NodeDiskPressure); d.Status != v1.ConditionFalse || d.Reason != "KubeletHasNoDiskPressure" || d.Message != "kubelet has no disk pressure" {
		t.Errorf("DiskPressure %+v", d)
	}
	moved := c.LastTransitionTime
	clock.Step(time.Minute)
	if err := n.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if c := condition(getNode(t, cs), v1.NodeMemoryPressure); !c.LastTransitionTime.Equal(&moved) {
		t.Errorf("transition time moved while True: %v -> %v", moved, c.LastTransitionTime)
	}
}
