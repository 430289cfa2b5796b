package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PLEG is the pod lifecycle event generator: it relists sandboxes and
// containers every period and reports the pods whose runtime state changed
// (a container started, exited, appeared or vanished; a sandbox changed).
type PLEG struct {
	rt     Runtime
	period time.Duration
	log    *slog.Logger
	last   map[string]entry
	// Relisted, when set, observes each relist's duration (metrics, benchmarks).
	Relisted func(time.Duration, error)
	// Listed, when set, sees each successful relist's objects (the
	// running pods and containers gauges).
	Listed func(sandboxes []*criv1.PodSandbox, containers []*criv1.Container)

	lastOK atomic.Int64 // unix nanos of the last successful relist
}

// plegThreshold is the kubelet's limit on the time since the last relist
// before the node is unhealthy.
const plegThreshold = 3 * time.Minute

// Healthy fails when no relist succeeded for plegThreshold, with the
// kubelet's message.
func (p *PLEG) Healthy() error {
	last := p.lastOK.Load()
	if last == 0 {
		return nil // not started yet
	}
	if since := time.Since(time.Unix(0, last)); since > plegThreshold {
		return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", since.Round(time.Second), plegThreshold)
	}
	return nil
}

type entry struct {
	uid   types.UID
	state int32
}

// PodObjects are a pod's sandboxes and containers by ID with their states
// (a sandbox's CRI PodSandboxState; a container's CRI ContainerState plus
// 100, so that the two never compare equal).
type PodObjects map[string]int32

// containerState is a container's state in PodObjects.
func containerState(s criv1.ContainerState) int32 { return 100 + int32(s) }

// PodEvent says that a pod's runtime objects changed, and what the relist
// saw of them: a pod worker that last read exactly these has nothing new
// to act on (its own start of the pod, seen by the next relist).
type PodEvent struct {
	UID  types.UID
	Seen PodObjects
	// ListedAt is when the relist's list calls had returned: a read of
	// the pod begun later saw at least as much.
	ListedAt time.Time
}

// Objects are the sandboxes and containers of the status, as PodObjects.
func (s *PodStatus) Objects() PodObjects {
	out := make(PodObjects, len(s.Sandboxes)+len(s.Containers))
	for _, sb := range s.Sandboxes {
		out[sb.ID] = int32(sb.State)
	}
	for _, c := range s.Containers {
		out[c.ID] = containerState(c.State)
	}
	return out
}

// NewPLEG returns a PLEG relisting every period (the kubelet uses 1 s).
func NewPLEG(rt Runtime, period time.Duration, log *slog.Logger) *PLEG {
	return &PLEG{rt: rt, period: period, log: log, last: map[string]entry{}}
}

// Run relists until ctx ends, sending an event for each changed pod on out.
func (p *PLEG) Run(ctx context.Context, out chan<- PodEvent) {
	t := time.NewTicker(p.period)
	defer t.Stop()
	for {
		changed, err := p.Relist(ctx)
		if err != nil {
			p.log.Warn("PLEG relist failed", "err", err)
		}
		for _, ev := range changed {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Relist lists the runtime once and returns the pods whose objects changed
// since the previous relist, with what it saw of each.
func (p *PLEG) Relist(ctx context.Context) ([]PodEvent, error) {
	start := time.Now()
	cur, err := p.list(ctx)
	listed := time.Now()
	if p.Relisted != nil {
		p.Relisted(time.Since(start), err)
	}
	if err != nil {
		return nil, err
	}
	p.lastOK.Store(time.Now().UnixNano())
	changed := map[types.UID]bool{}
	for id, e := range cur {
		if old, ok := p.last[id]; !ok || old.state != e.state {
			changed[e.uid] = true
		}
	}
	for id, e := range p.last {
		if _, ok := cur[id]; !ok {
			changed[e.uid] = true
		}
	}
	p.last = cur
	seen := make(map[types.UID]PodObjects, len(changed))
	for uid := range changed {
		seen[uid] = PodObjects{}
	}
	for id, e := range cur {
		if objs, ok := seen[e.uid]; ok {
			objs[id] = e.state
		}
	}
	out := make([]PodEvent, 0, len(changed))
	for uid, objs := range seen {
		out = append(out, PodEvent{UID: uid, Seen: objs, ListedAt: listed})
	}
	return out, nil
}

func (p *PLEG) list(ctx context.Context) (map[string]entry, error) {
	sandboxes, err := p.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := p.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	if p.Listed != nil {
		p.Listed(sandboxes, containers)
	}
	cur := make(map[string]entry, len(sandboxes)+len(containers))
	for _, sb := range sandboxes {
		if ref, ok := PodRefFromLabels(sb.Labels); ok {
			cur[sb.Id] = entry{uid: ref.UID, state: int32(sb.State)}
		}
	}
	for _, c := range containers {
		if ref, ok := PodRefFromLabels(c.Labels); ok {
			cur[c.Id] = entry{uid: ref.UID, state: containerState(c.State)}
		}
	}
	return cur, nil
}
