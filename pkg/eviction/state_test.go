package eviction

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// checkpointed is st through the agent's JSON checkpoint.
func checkpointed(t *testing.T, st State) State {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A restart under the same policy: the soft threshold's grace period
// goes on from when it was first observed, not from the restart.
func TestStateForPolicyKeepsSoftGrace(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := mustPolicy(t, Config{
		EvictionSoft:            map[string]string{"memory.available": "2Gi"},
		EvictionSoftGracePeriod: map[string]string{"memory.available": "2m"},
	}, Disks{})
	sync := func(st State) (Plan, State) {
		return Synchronize(clock.Now(), pol, MakeObservations(memoryFigures(clock.Now(), 1500<<20)), memoryPods(), st)
	}
	_, st := sync(State{})
	clock.Step(90 * time.Second)
	_, st = sync(st)
	restored := checkpointed(t, st).ForPolicy(pol)
	clock.Step(45 * time.Second) // 2m15s since first observed
	plan, _ := sync(restored)
	if plan.Evict == nil {
		t.Errorf("soft grace restarted by the restart: %s", plan)
	}
	if plan, _ := sync(State{}); plan.Evict != nil {
		t.Errorf("without the checkpoint the grace starts over, yet %s", plan)
	}
}

// A restart with a changed policy: the pressure stays for its transition
// period, the old threshold no longer counts (nothing would resolve it),
// so nothing is evicted for it and the condition clears in time.
func TestStateForPolicyDropsOldThresholds(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	old := mustPolicy(t, Config{EvictionHard: map[string]string{"memory.available": "2Gi"}, EvictionPressureTransitionPeriod: metav1.Duration{Duration: time.Minute}}, Disks{})
	relaxed := mustPolicy(t, Config{EvictionHard: map[string]string{"memory.available": "1Mi"}, EvictionPressureTransitionPeriod: metav1.Duration{Duration: time.Minute}}, Disks{})
	obs := func() Observations { return MakeObservations(memoryFigures(clock.Now(), 1500<<20)) }
	_, st := Synchronize(clock.Now(), old, obs(), memoryPods(), State{})
	if len(st.ThresholdsMet) != 1 || !HasNodeCondition(st.Conditions, v1.NodeMemoryPressure) {
		t.Fatalf("setup: %+v", st)
	}
	restored := checkpointed(t, st).ForPolicy(relaxed)
	if len(restored.ThresholdsMet) != 0 || len(restored.ThresholdsFirstObservedAt) != 0 {
		t.Errorf("old thresholds kept: %+v", restored)
	}
	if !HasNodeCondition(restored.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("pressure forgotten: %v", restored.Conditions)
	}
	clock.Step(10 * time.Second)
	plan, next := Synchronize(clock.Now(), relaxed, obs(), memoryPods(), restored)
	if plan.Evict != nil || !HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("inside the transition period: %s", plan)
	}
	clock.Step(time.Minute)
	if plan, _ := Synchronize(clock.Now(), relaxed, obs(), memoryPods(), next); len(plan.Conditions) != 0 || plan.Evict != nil {
		t.Errorf("after the transition period: %s", plan)
	}
}
