package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/metrics"
	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/podworker"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// The kubelet's evictionMonitoringPeriod, and the checkpoint of the
// manager's state under the root directory (the kubelet keeps it in
// memory; a restart must not forget a pressure still in its transition
// period, nor a threshold's grace).
const (
	evictionMonitoringPeriod = 10 * time.Second
	evictionCheckpoint       = "eviction_manager_state.json"
	nodeStatusEventFormat    = "Node %s status is now: %s"
)

// pressure is the eviction manager's active conditions, read by node
// admission and the node status before the loop runs.
type pressure struct {
	mu         sync.Mutex
	conditions []v1.NodeConditionType
}

func (p *pressure) Conditions() []v1.NodeConditionType {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.conditions)
}

// set stores the conditions and says which pressures changed.
func (p *pressure) set(cs []v1.NodeConditionType) []eviction.Pressure {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []eviction.Pressure
	for _, pr := range eviction.Pressures {
		if eviction.HasNodeCondition(p.conditions, pr.Type) != eviction.HasNodeCondition(cs, pr.Type) {
			changed = append(changed, pr)
		}
	}
	p.conditions = slices.Clone(cs)
	return changed
}

// evictionDeps is what the eviction loop acts through.
type evictionDeps struct {
	stats  *stats.Provider
	pods   *podworker.Manager
	images interface {
		DeleteUnusedImages(context.Context) (int64, error)
	}
	metrics *metrics.Eviction
	// recorder is nil standalone; onChange asks for a node status update.
	recorder record.EventRecorder
	onChange func()
	// kubepods is the kubepods cgroup's name under mountRoot ("" with
	// cgroupsPerQOS off: no allocatable signal).
	mountRoot, kubepods string
}

// evictionLoop is the kubelet's eviction manager: one pass every
// evictionMonitoringPeriod, the decisions pkg/eviction's, the acts here.
type evictionLoop struct {
	d          evictionDeps
	policy     eviction.Policy
	pressure   *pressure
	nodeName   string
	nodeRef    *v1.ObjectReference
	checkpoint string
	log        *slog.Logger
	now        func() time.Time
	state      eviction.State
}

func newEvictionLoop(policy eviction.Policy, p *pressure, d evictionDeps, nodeName, rootDir string, log *slog.Logger) *evictionLoop {
	l := &evictionLoop{
		d: d, policy: policy, pressure: p, nodeName: nodeName,
		nodeRef:    &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)},
		checkpoint: filepath.Join(rootDir, evictionCheckpoint), log: log.With("component", "eviction"), now: time.Now,
	}
	for _, w := range policy.Warnings {
		l.log.Warn("eviction thresholds", "warning", w)
	}
	if st, err := loadEvictionState(l.checkpoint); err != nil {
		l.log.Warn("eviction state checkpoint unreadable; starting afresh", "err", err)
	} else {
		l.state = st.ForPolicy(policy)
		p.set(st.Conditions)
	}
	return l
}

// restoredPressure is the pressure of the checkpoint under rootDir (none
// if there is no readable one; newEvictionLoop says why).
func restoredPressure(rootDir string, log *slog.Logger) *pressure {
	p := &pressure{}
	st, err := loadEvictionState(filepath.Join(rootDir, evictionCheckpoint))
	if err != nil {
		return p
	}
	if len(st.Conditions) > 0 {
		log.Info("node pressure restored from the eviction checkpoint", "conditions", st.Conditions)
	}
	p.set(st.Conditions)
	return p
}

func loadEvictionState(path string) (eviction.State, error) {
	var st eviction.State
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// Run passes every monitoring period until ctx ends.
func (l *evictionLoop) Run(ctx context.Context) {
	t := time.NewTicker(evictionMonitoringPeriod)
	defer t.Stop()
	for {
		if evicted := l.pass(ctx); evicted != nil {
			// As the kubelet: wait for the pod's cleanup before the next
			// pass, so that the same pressure does not take a second pod.
			if err := podworker.WaitEvicted(ctx, evicted); err != nil && ctx.Err() == nil {
				l.log.Warn("evicted pod not cleaned up in time", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass is one synchronize; it returns the stopped channel of the pod it
// evicted for a threshold, if any.
func (l *evictionLoop) pass(ctx context.Context) <-chan struct{} {
	obs, summary, err := l.observe(ctx)
	if err != nil {
		l.log.Error("eviction manager: no stats", "err", err)
		return nil
	}
	plan, next := eviction.Synchronize(l.now(), l.policy, obs, evictionPods(l.d.pods.ActivePods(), summary), l.state)
	l.state = next
	l.save()
	l.report(plan.Conditions)
	for _, v := range plan.LocalStorage {
		l.evict(v)
	}
	if plan.NodeEvent == nil {
		return nil
	}
	l.log.Info("eviction threshold met", "plan", plan.String())
	l.nodeEvent(v1.EventTypeWarning, plan.NodeEvent.Reason, plan.NodeEvent.Message)
	for sig, at := range plan.StatsAge {
		l.d.metrics.StatsAge(string(sig), l.now().Sub(at))
	}
	if len(plan.Reclaim) > 0 && l.reclaim(ctx, plan.Reclaim) {
		return nil
	}
	if plan.Evict == nil {
		l.log.Error("eviction manager: unable to evict any pods from the node")
		return nil
	}
	return l.evict(*plan.Evict)
}

func (l *evictionLoop) observe(ctx context.Context) (eviction.Observations, *stats.Summary, error) {
	summary, err := l.d.stats.Summary(ctx)
	if err != nil {
		return nil, nil, err
	}
	var pods *eviction.MemoryFigures
	if l.d.kubepods != "" {
		if pods, err = kubepodsMemory(l.d.mountRoot, l.d.kubepods, l.now()); err != nil {
			l.log.Debug("kubepods memory", "err", err)
		}
	}
	return eviction.MakeObservations(figures(summary, pods)), summary, nil
}

// reclaim runs the node-level reclaim steps and says whether they freed
// enough, from fresh stats.
func (l *evictionLoop) reclaim(ctx context.Context, steps []eviction.ReclaimStep) bool {
	for _, s := range steps {
		var err error
		switch s {
		case eviction.DeleteAllUnusedContainers:
			err = l.d.pods.CollectAllGarbage(ctx)
		case eviction.DeleteUnusedImages:
			if l.d.images != nil {
				_, err = l.d.images.DeleteUnusedImages(ctx)
			}
		}
		if err != nil {
			l.log.Warn("eviction manager: node-level reclaim", "step", s, "err", err)
		}
	}
	obs, _, err := l.observe(ctx)
	if err != nil {
		l.log.Error("eviction manager: no stats after reclaim", "err", err)
		return false
	}
	if eviction.ReclaimSufficed(l.policy, obs) {
		l.log.Info("eviction manager: able to reduce resource pressure without evicting pods")
		return true
	}
	return false
}

// evict stops one pod as the kubelet's evictPod; nil if it is gone.
func (l *evictionLoop) evict(v eviction.Victim) <-chan struct{} {
	stopped, ok := l.d.pods.Evict(v.UID, podworker.Eviction{
		Message: v.Message, Annotations: v.Annotations, Condition: v.Condition, GracePeriodSeconds: v.GracePeriodSeconds,
	})
	if !ok {
		return nil
	}
	l.log.Info("eviction manager: pod evicted", "pod", v.Namespace+"/"+v.Name, "podUID", v.UID, "signal", v.Signal, "message", v.Message)
	l.d.metrics.PodEvicted(v.Signal)
	return stopped
}

// report publishes the conditions: node admission and the node status
// read them, and each change is a Normal event on the node, as the
// kubelet's node status setters record.
func (l *evictionLoop) report(cs []v1.NodeConditionType) {
	changed := l.pressure.set(cs)
	for _, p := range changed {
		ev := p.FalseEvent
		if eviction.HasNodeCondition(cs, p.Type) {
			ev = p.TrueEvent
		}
		l.nodeEvent(v1.EventTypeNormal, ev, fmt.Sprintf(nodeStatusEventFormat, l.nodeName, ev))
	}
	if len(changed) > 0 && l.d.onChange != nil {
		l.d.onChange()
	}
}

func (l *evictionLoop) nodeEvent(typ, reason, msg string) {
	if l.d.recorder == nil {
		l.log.Info("node event", "type", typ, "reason", reason, "message", msg)
		return
	}
	l.d.recorder.Event(l.nodeRef, typ, reason, msg)
}

func (l *evictionLoop) save() {
	b, err := json.Marshal(l.state)
	if err == nil {
		err = atomicfile.Write(l.checkpoint, b, 0o600)
	}
	if err != nil {
		l.log.Warn("eviction state checkpoint", "err", err)
	}
}

// kubepodsName is the kubepods cgroup the allocatable signal reads, ""
// without QoS cgroups.
func kubepodsName(cgroupRoot string, flat bool) string {
	if flat {
		return ""
	}
	return podcgroup.KubepodsName(cgroupRoot)
}
