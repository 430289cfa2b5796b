package endpointutil

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TriggerTimeTracker computes the endpoints.kubernetes.io/last-change-trigger-time
// annotation as upstream's TriggerTimeTracker: the earliest of the changes
// that this sync is the first to see, a change being a pod's Ready
// transition or the service's creation. Network programming latency is
// measured from it. A service seen for the first time reports its
// creation.
//
// Calls for one service must not run concurrently (the work queue sees to
// that); calls for different services may.
type TriggerTimeTracker struct {
	mu     sync.Mutex
	states map[types.NamespacedName]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time // pod name → Ready transition
}

// NewTriggerTimeTracker returns an empty tracker.
func NewTriggerTimeTracker() *TriggerTimeTracker {
	return &TriggerTimeTracker{states: map[types.NamespacedName]triggerState{}}
}

// Compute records the pods' and service's trigger times and returns the
// time to publish; zero means no annotation.
func (t *TriggerTimeTracker) Compute(svc *v1.Service, pods []*v1.Pod) time.Time {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	last, known := t.states[key]
	t.mu.Unlock()

	var earliest time.Time
	seen := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
	for _, pod := range pods {
		c := readyCondition(pod)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		next.pods[pod.Name] = c.LastTransitionTime.Time
		if c.LastTransitionTime.After(last.pods[pod.Name]) {
			seen(c.LastTransitionTime.Time)
		}
	}
	if next.service.After(last.service) {
		seen(next.service)
	}
	t.mu.Lock()
	t.states[key] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

// Forget drops a deleted service's state.
func (t *TriggerTimeTracker) Forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, types.NamespacedName{Namespace: namespace, Name: name})
}
