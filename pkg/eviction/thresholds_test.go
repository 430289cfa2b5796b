package eviction

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// As upstream's TestMakeSignalObservations.
func TestMakeObservations(t *testing.T) {
	now := time.Now()
	f := Figures{
		Memory:  NodeMemory(now, uint64(4*gi), uint64(3*gi)),
		Pods:    &MemoryFigures{Time: now, Available: uint64(500 << 20), WorkingSet: uint64(2*gi + 100<<20)},
		NodeFs:  &FsFigures{Time: now, Available: 10, Capacity: 100, InodesFree: u64(5), Inodes: u64(50)},
		ImageFs: &FsFigures{Time: now, Available: 20, Capacity: 200},
		Rlimit:  &RlimitFigures{Time: now, MaxPID: 100, Running: 40},
	}
	obs := MakeObservations(f)
	want := Observations{
		SignalMemoryAvailable:            {Available: gi, Capacity: 4 * gi, Time: now},
		SignalAllocatableMemoryAvailable: {Available: 500 << 20, Capacity: 2*gi + 600<<20, Time: now},
		SignalNodeFsAvailable:            {Available: 10, Capacity: 100, Time: now},
		SignalNodeFsInodesFree:           {Available: 5, Capacity: 50, Time: now},
		SignalImageFsAvailable:           {Available: 20, Capacity: 200, Time: now},
		SignalPIDAvailable:               {Available: 60, Capacity: 100, Time: now},
	}
	if len(obs) != len(want) {
		t.Fatalf("observations %v", obs)
	}
	for s, o := range want {
		if obs[s] != o {
			t.Errorf("%s: %+v, want %+v", s, obs[s], o)
		}
	}
	if m := NodeMemory(now, 10, 20); m.Available != 0 {
		t.Errorf("working set over capacity: available %d", m.Available)
	}
	f.AccessibleSwap, f.SwapUsage = uint64(gi), uint64(gi/2)
	if o := MakeObservations(f)[SignalMemoryAvailable]; o.Available != gi+gi/2 || o.Capacity != 5*gi {
		t.Errorf("with swap: %+v", o)
	}
}

// As upstream's TestThresholdsMet and TestThresholdsMetGracePeriod.
func TestThresholdsMet(t *testing.T) {
	q := resource.MustParse("1Gi")
	reclaim := resource.MustParse("500Mi")
	hard := Threshold{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: Value{Quantity: &q}, MinReclaim: &Value{Quantity: &reclaim}}
	pct := Threshold{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: Value{Percentage: 0.1}}
	cases := []struct {
		name       string
		obs        Observations
		minReclaim bool
		want       int
	}{
		{"above", Observations{SignalMemoryAvailable: {Available: 2 * gi}}, false, 0},
		{"equal is not met", Observations{SignalMemoryAvailable: {Available: gi}}, false, 0},
		{"below", Observations{SignalMemoryAvailable: {Available: 500 << 20}}, false, 1},
		{"above, within minimum reclaim", Observations{SignalMemoryAvailable: {Available: gi + 200<<20}}, true, 1},
		{"above minimum reclaim", Observations{SignalMemoryAvailable: {Available: 2 * gi}}, true, 0},
		{"no observation", Observations{}, false, 0},
		{"percentage met", Observations{SignalNodeFsAvailable: {Available: 9, Capacity: 100}}, false, 1},
		{"percentage not met", Observations{SignalNodeFsAvailable: {Available: 11, Capacity: 100}}, false, 0},
	}
	for _, tc := range cases {
		if got := thresholdsMet([]Threshold{hard, pct}, tc.obs, tc.minReclaim); len(got) != tc.want {
			t.Errorf("%s: met %v", tc.name, got)
		}
	}

	now := time.Now()
	soft := hard
	soft.GracePeriod = time.Minute
	first := thresholdsFirstObservedAt([]Threshold{hard, soft}, nil, now.Add(-30*time.Second))
	if got := thresholdsMetGracePeriod([]Threshold{hard, soft}, first, now); len(got) != 1 || !got[0].Hard() {
		t.Errorf("30s in: %v", got)
	}
	first = thresholdsFirstObservedAt([]Threshold{hard, soft}, first, now)
	if got := thresholdsMetGracePeriod([]Threshold{hard, soft}, first, now.Add(30*time.Second)); len(got) != 2 {
		t.Errorf("60s in: %v", got)
	}
	// A threshold no longer met is forgotten: its grace period restarts.
	if got := thresholdsFirstObservedAt([]Threshold{hard}, first, now); len(got) != 1 {
		t.Errorf("forgotten: %v", got)
	}
}

// As upstream's TestThresholdsUpdatedStats.
func TestThresholdsUpdatedStats(t *testing.T) {
	q := resource.MustParse("1Gi")
	th := []Threshold{{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: Value{Quantity: &q}}}
	now := time.Now()
	cases := []struct {
		name      string
		obs, last Observations
		want      int
	}{
		{"no observation", Observations{}, Observations{}, 0},
		{"first observation", Observations{SignalMemoryAvailable: {Time: now}}, Observations{}, 1},
		{"undated", Observations{SignalMemoryAvailable: {}}, Observations{SignalMemoryAvailable: {}}, 1},
		{"same time", Observations{SignalMemoryAvailable: {Time: now}}, Observations{SignalMemoryAvailable: {Time: now}}, 0},
		{"older", Observations{SignalMemoryAvailable: {Time: now}}, Observations{SignalMemoryAvailable: {Time: now.Add(time.Second)}}, 0},
		{"newer", Observations{SignalMemoryAvailable: {Time: now.Add(time.Second)}}, Observations{SignalMemoryAvailable: {Time: now}}, 1},
	}
	for _, tc := range cases {
		if got := thresholdsUpdatedStats(th, tc.obs, tc.last); len(got) != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

// As upstream's TestNodeConditionsObservedSince.
func TestNodeConditionsTransition(t *testing.T) {
	now := time.Now()
	at := nodeConditionsLastObservedAt([]v1.NodeConditionType{v1.NodeMemoryPressure}, map[v1.NodeConditionType]time.Time{v1.NodeDiskPressure: now.Add(-10 * time.Minute)}, now)
	if got := nodeConditionsObservedSince(at, 5*time.Minute, now.Add(4*time.Minute)); !slices.Equal(got, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Errorf("4m after: %v", got)
	}
	if got := nodeConditionsObservedSince(at, 5*time.Minute, now.Add(5*time.Minute)); len(got) != 0 {
		t.Errorf("5m after: %v", got)
	}
	if got := nodeConditionsObservedSince(at, 0, now); len(got) != 0 {
		t.Errorf("no transition period: %v", got)
	}
}

func TestNodeConditionsAndTaints(t *testing.T) {
	conds := NodeConditions([]v1.NodeConditionType{v1.NodeDiskPressure})
	want := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
	}
	if !slices.Equal(conds, want) {
		t.Errorf("conditions %+v", conds)
	}
	all := NodeConditions([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodePIDPressure})
	if all[0].Reason != "KubeletHasInsufficientMemory" || all[0].Message != "kubelet has insufficient memory available" ||
		all[2].Reason != "KubeletHasInsufficientPID" || all[2].Message != "kubelet has insufficient PID available" {
		t.Errorf("true conditions %+v", all)
	}
	taints := Taints([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodePIDPressure})
	if len(taints) != 2 || taints[0].Key != "node.kubernetes.io/memory-pressure" || taints[1].Key != "node.kubernetes.io/pid-pressure" || taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("taints %+v", taints)
	}
}

// The agent may checkpoint State: it must survive JSON with its keys.
func TestStateRoundTrip(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := mustPolicy(t, Config{EvictionSoft: map[string]string{"memory.available": "2Gi"}, EvictionSoftGracePeriod: map[string]string{"memory.available": "1m"}}, Disks{})
	_, st := Synchronize(now, pol, MakeObservations(memoryFigures(now, gi)), memoryPods(), State{})
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Minute)
	plan, _ := Synchronize(later, pol, MakeObservations(memoryFigures(later, gi)), memoryPods(), back)
	if plan.Evict == nil || !HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("after a restart the grace period still counts from the first observation: %s", plan)
	}
}
