package eviction

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Policy is the parsed configuration Synchronize enforces.
type Policy struct {
	Thresholds               []Threshold
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is a soft eviction's grace (at most the
	// pod's terminationGracePeriodSeconds); hard evictions take 1s.
	MaxPodGracePeriodSeconds int64
	Disks                    Disks
	// LocalStorageCapacityIsolation: enforce emptyDir sizeLimit and
	// ephemeral-storage limits (the kubelet's default, true).
	LocalStorageCapacityIsolation bool
	// Warnings are what WithContainerFs ignored, for the agent's log.
	Warnings []string
}

// NewPolicy parses and defaults c for the node's disks.
func NewPolicy(c Config, enforceNodeAllocatable []string, d Disks, localStorageCapacityIsolation bool) (Policy, error) {
	c.SetDefaults()
	ts, err := Parse(c, enforceNodeAllocatable)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{
		PressureTransitionPeriod:      c.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds:      int64(c.EvictionMaxPodGracePeriod),
		Disks:                         d,
		LocalStorageCapacityIsolation: localStorageCapacityIsolation,
	}
	p.Thresholds, err = WithContainerFs(ts, d)
	if err != nil {
		p.Warnings = append(p.Warnings, err.Error())
	}
	return p, nil
}

// State is what the eviction manager remembers between syncs; the agent
// keeps it (and may checkpoint it: it marshals to JSON).
type State struct {
	// Conditions are the pressure conditions the node reports (Admit's
	// and the node status's input).
	Conditions                   []v1.NodeConditionType
	ThresholdsFirstObservedAt    map[string]time.Time
	NodeConditionsLastObservedAt map[v1.NodeConditionType]time.Time
	// ThresholdsMet are met past their grace period and not yet resolved
	// by their minimum reclaim.
	ThresholdsMet    []Threshold
	LastObservations Observations
}

// ForPolicy is a checkpointed state for the thresholds of pol: the
// pressure conditions and their last observations stay (a pressure in
// its transition period outlives a restart), the thresholds met and
// first observed that pol no longer has are dropped (the kubelet keeps
// its state in memory, so a restart with a changed configuration starts
// with the new thresholds only; a checkpoint must not bring the old ones
// back, where nothing would ever resolve them).
func (st State) ForPolicy(pol Policy) State {
	out := st
	out.ThresholdsMet = nil
	for _, t := range st.ThresholdsMet {
		if hasThreshold(pol.Thresholds, t) {
			out.ThresholdsMet = append(out.ThresholdsMet, t)
		}
	}
	out.ThresholdsFirstObservedAt = map[string]time.Time{}
	for _, t := range pol.Thresholds {
		if at, ok := st.ThresholdsFirstObservedAt[t.Key()]; ok {
			out.ThresholdsFirstObservedAt[t.Key()] = at
		}
	}
	return out
}

// Victim is a pod to evict and how.
type Victim struct {
	UID             types.UID
	Namespace, Name string
	// GracePeriodSeconds overrides the pod's.
	GracePeriodSeconds int64
	// Message is the status message and the Evicted event's message.
	Message string
	// Annotations go on the Evicted event.
	Annotations map[string]string
	// Condition is the DisruptionTarget condition of a threshold eviction.
	Condition *v1.PodCondition
	// Signal is the kubelet_evictions eviction_signal label.
	Signal string
}

// Event is a Warning event on the node.
type Event struct{ Reason, Message string }

// Plan is one sync's decision.
type Plan struct {
	// Conditions reported True (the transition period included).
	Conditions []v1.NodeConditionType
	// LocalStorage victims, evicted at once; when there are any, the
	// thresholds wait for the next sync, as the kubelet's.
	LocalStorage []Victim
	// Signal and Resource of the threshold to reclaim, if any.
	Signal   Signal
	Resource v1.ResourceName
	// NodeEvent is EvictionThresholdMet "Attempting to reclaim <resource>".
	NodeEvent *Event
	// Reclaim steps run first; Evict only if ReclaimSufficed says no.
	Reclaim []ReclaimStep
	// Evict is the one pod to evict this sync; nil if none may be.
	Evict *Victim
	// StatsAge: the observation times of the thresholds acted on, for
	// kubelet_eviction_stats_age_seconds.
	StatsAge map[Signal]time.Time
}

func (p Plan) String() string {
	s := fmt.Sprintf("conditions=%v", p.Conditions)
	for _, v := range p.LocalStorage {
		s += fmt.Sprintf(" evict=%s/%s(%s)", v.Namespace, v.Name, v.Signal)
	}
	if p.Signal != "" {
		s += fmt.Sprintf(" reclaim=%s%v", p.Signal, p.Reclaim)
	}
	if p.Evict != nil {
		s += fmt.Sprintf(" evict=%s/%s(grace %ds)", p.Evict.Namespace, p.Evict.Name, p.Evict.GracePeriodSeconds)
	}
	return s
}

// Synchronize is one pass of the kubelet's eviction manager (synchronize),
// without its side effects: pods are the active pods with their stats.
func Synchronize(now time.Time, pol Policy, obs Observations, pods []Pod, st State) (Plan, State) {
	if len(pol.Thresholds) == 0 && !pol.LocalStorageCapacityIsolation {
		return Plan{}, st
	}
	met := thresholdsMet(pol.Thresholds, obs, false)
	if len(st.ThresholdsMet) > 0 {
		met = mergeThresholds(met, thresholdsMet(st.ThresholdsMet, obs, true))
	}
	next := State{ThresholdsFirstObservedAt: thresholdsFirstObservedAt(met, st.ThresholdsFirstObservedAt, now)}
	next.NodeConditionsLastObservedAt = nodeConditionsLastObservedAt(nodeConditions(met), st.NodeConditionsLastObservedAt, now)
	next.Conditions = nodeConditionsObservedSince(next.NodeConditionsLastObservedAt, pol.PressureTransitionPeriod, now)
	next.ThresholdsMet = thresholdsMetGracePeriod(met, next.ThresholdsFirstObservedAt, now)
	next.LastObservations = obs
	acted := thresholdsUpdatedStats(next.ThresholdsMet, obs, st.LastObservations)

	plan := Plan{Conditions: next.Conditions}
	if pol.LocalStorageCapacityIsolation {
		if plan.LocalStorage = localStorageVictims(pods, pol.Disks); len(plan.LocalStorage) > 0 {
			return plan, next
		}
	}
	if len(acted) == 0 {
		return plan, next
	}
	sortByEvictionPriority(acted)
	t := acted[0]
	plan.Signal, plan.Resource = t.Signal, signalResource[t.Signal]
	plan.NodeEvent = &Event{Reason: reclaimEventReason, Message: fmt.Sprintf(reclaimEventMessage, plan.Resource)}
	plan.Reclaim = reclaimSteps(pol.Disks)[t.Signal]
	plan.StatsAge = statsAge(acted, obs)
	plan.Evict = victim(pol, t, acted, obs, pods)
	return plan, next
}

// ReclaimSufficed is the kubelet's check after node-level reclaim: with
// fresh observations, no threshold is met counting its minimum reclaim.
func ReclaimSufficed(pol Policy, after Observations) bool {
	return len(thresholdsMet(pol.Thresholds, after, true)) == 0
}

func statsAge(ts []Threshold, obs Observations) map[Signal]time.Time {
	out := map[Signal]time.Time{}
	for _, t := range ts {
		if at := obs[t.Signal].Time; !at.IsZero() {
			out[t.Signal] = at
		}
	}
	return out
}

// victim ranks the pods for t's signal and takes the first that is not
// critical.
func victim(pol Policy, t Threshold, acted []Threshold, obs Observations, pods []Pod) *Victim {
	rank, ok := rankFuncs(pol.Disks)[t.Signal]
	if !ok || len(pods) == 0 {
		return nil
	}
	ranked := make([]*Pod, len(pods))
	for i := range pods {
		ranked[i] = &pods[i]
	}
	rank(ranked)
	for _, p := range ranked {
		if p.Critical {
			continue
		}
		msg, ann := evictionMessage(signalResource[t.Signal], p, acted, obs)
		return &Victim{
			UID: p.UID, Namespace: p.Namespace, Name: p.Name,
			GracePeriodSeconds: gracePeriod(pol, t, p),
			Message:            msg, Annotations: ann, Signal: string(t.Signal),
			Condition: &v1.PodCondition{
				Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: p.Generation,
				Reason: v1.PodReasonTerminationByKubelet, Message: msg,
			},
		}
	}
	return nil
}

func gracePeriod(pol Policy, t Threshold, p *Pod) int64 {
	if t.Hard() {
		return immediateGraceSecs
	}
	if p.TerminationGracePeriodSeconds != nil {
		return min(pol.MaxPodGracePeriodSeconds, *p.TerminationGracePeriodSeconds)
	}
	return pol.MaxPodGracePeriodSeconds
}
