package eviction

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// thresholdsMet is the kubelet's: the thresholds whose signal is below
// their value, or, with enforceMinReclaim, below value plus minimum
// reclaim (a threshold stays met until its minimum is reclaimed).
// Thresholds without an observation are not met.
func thresholdsMet(ts []Threshold, obs Observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.Of(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q.Add(t.MinReclaim.Of(o.Capacity))
		}
		if t.Operator == OpLessThan && q.Cmp(*quantity(t.Signal, o.Available)) > 0 {
			out = append(out, t)
		}
	}
	return out
}

func mergeThresholds(a, b []Threshold) []Threshold {
	out := append([]Threshold{}, a...)
	for _, t := range b {
		if !hasThreshold(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func hasThreshold(ts []Threshold, t Threshold) bool {
	for _, x := range ts {
		if x.same(t) {
			return true
		}
	}
	return false
}

// thresholdsFirstObservedAt keeps the first time each still-met threshold
// was seen; thresholds no longer met are forgotten, restarting their grace
// period when they come back.
func thresholdsFirstObservedAt(ts []Threshold, last map[string]time.Time, now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for _, t := range ts {
		at, ok := last[t.Key()]
		if !ok {
			at = now
		}
		out[t.Key()] = at
	}
	return out
}

// thresholdsMetGracePeriod: the met thresholds whose grace period has
// passed since they were first observed.
func thresholdsMetGracePeriod(ts []Threshold, firstAt map[string]time.Time, now time.Time) []Threshold {
	var out []Threshold
	for _, t := range ts {
		at, ok := firstAt[t.Key()]
		if ok && now.Sub(at) >= t.GracePeriod && !hasThreshold(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// thresholdsUpdatedStats: only act on thresholds whose signal has a newer
// observation than the last sync's (or an undated one), so that stale
// stats do not evict a second pod for the same shortage.
func thresholdsUpdatedStats(ts []Threshold, obs, last Observations) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, seen := last[t.Signal]
		if !seen || o.Time.IsZero() || o.Time.After(l.Time) {
			out = append(out, t)
		}
	}
	return out
}

// nodeConditions are the conditions the thresholds report, once each.
func nodeConditions(ts []Threshold) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, t := range ts {
		if c, ok := signalCondition[t.Signal]; ok && !HasNodeCondition(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func nodeConditionsLastObservedAt(cs []v1.NodeConditionType, last map[v1.NodeConditionType]time.Time, now time.Time) map[v1.NodeConditionType]time.Time {
	out := map[v1.NodeConditionType]time.Time{}
	for k, v := range last {
		out[k] = v
	}
	for _, c := range cs {
		out[c] = now
	}
	return out
}

// nodeConditionsObservedSince: a condition stays reported for the
// pressure transition period after it was last observed, so the node does
// not flap in and out of pressure. Sorted, where the kubelet's map order is
// random.
func nodeConditionsObservedSince(at map[v1.NodeConditionType]time.Time, period time.Duration, now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for c, t := range at {
		if now.Sub(t) < period {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// HasNodeCondition reports whether c is among cs.
func HasNodeCondition(cs []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// byEvictionPriority: memory first, thresholds without a resource to
// reclaim last — the kubelet's ordering, kept stable here.
func sortByEvictionPriority(ts []Threshold) {
	rank := func(t Threshold) int {
		switch _, ok := signalResource[t.Signal]; {
		case isMemorySignal(t.Signal):
			return 0
		case ok:
			return 1
		}
		return 2
	}
	sort.SliceStable(ts, func(i, j int) bool { return rank(ts[i]) < rank(ts[j]) })
}
