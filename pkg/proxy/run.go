package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

var errNoInformers = errors.New("service proxy: Run needs Config.Informers")

// watch registers the informers whose events trigger syncs.
func (p *Proxier) watch(f informers.SharedInformerFactory) {
	svcInf, sliceInf := f.Core().V1().Services(), f.Discovery().V1().EndpointSlices()
	p.services, p.slices = svcInf.Lister(), sliceInf.Lister()
	p.synced = []cache.InformerSynced{svcInf.Informer().HasSynced, sliceInf.Informer().HasSynced}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.notify() },
		UpdateFunc: func(any, any) { p.notify() },
		DeleteFunc: func(any) { p.notify() },
	}
	_, _ = svcInf.Informer().AddEventHandler(crash.EventHandler(p.log, "proxy", h))
	// The informer's store holds an object before its handlers run, so a
	// trigger recorded here is applied by the next sync's listing.
	_, _ = sliceInf.Informer().AddEventHandler(crash.EventHandler(p.log, "proxy", cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.recordTrigger(nil, obj); p.notify() },
		UpdateFunc: func(old, obj any) { p.recordTrigger(old, obj); p.notify() },
		DeleteFunc: func(any) { p.notify() },
	}))
}

// maxTriggers bounds the change times kept between two syncs; more are
// left untimed.
const maxTriggers = 10000

// triggerLog keeps the change times of the EndpointSlice changes not yet
// applied. It has its own lock: informer handlers must not wait for a
// sync.
type triggerLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (l *triggerLog) add(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.times) < maxTriggers {
		l.times = append(l.times, t)
	}
}

func (l *triggerLog) take() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.times
	l.times = nil
	return t
}

// requeue puts back the times of changes a failed sync did not apply.
func (l *triggerLog) requeue(t []time.Time) {
	if len(t) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(t, l.times...)
	l.times = l.times[:min(len(l.times), maxTriggers)]
}

// recordTrigger notes the change time the EndpointSlice controller puts
// in endpoints.kubernetes.io/last-change-trigger-time, as kube-proxy does
// for kubeproxy_network_programming_duration_seconds: once per new value,
// for slices the proxy handles, and only for changes made after the
// Proxier started (older ones were not waiting for it). Deletions are not
// timed: a deleted slice's annotation tells of its last update.
func (p *Proxier) recordTrigger(old, obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.AddressType != discoveryv1.AddressTypeIPv4 || s.Labels[LabelServiceProxyName] != "" {
		return
	}
	if _, headless := s.Labels[v1.IsHeadlessService]; headless {
		return
	}
	value := s.Annotations[v1.EndpointsLastChangeTriggerTime]
	if o, ok := old.(*discoveryv1.EndpointSlice); ok && o.Annotations[v1.EndpointsLastChangeTriggerTime] == value {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil || !t.After(p.started) {
		return
	}
	p.triggers.add(t)
}

// notify records that something changed; many events before the next sync
// make one sync.
func (p *Proxier) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run syncs once the informers have synced, then after changes (at most
// once per MinSyncPeriod), after failures and at least every
// FullSyncPeriod, until ctx ends. Start the informer factory before or
// after calling Run.
func (p *Proxier) Run(ctx context.Context) error {
	if p.services == nil {
		return errNoInformers
	}
	p.log.Info("starting service proxy", "table", TableName, "clusterCIDR", p.cfg.ClusterCIDR,
		"minSyncPeriod", p.cfg.MinSyncPeriod, "fullSyncPeriod", p.cfg.FullSyncPeriod)
	// Syncing before the caches are full would delete the rules of every
	// service not listed yet.
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return nil
	}
	timer := p.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	p.armed(0)
	arm := func(d time.Duration) {
		timer.Reset(d)
		p.armed(d)
	}
	var last time.Time
	pending := true // a sync is due when timer fires
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
			if !pending {
				pending = true
				arm(max(0, last.Add(p.cfg.MinSyncPeriod).Sub(p.cfg.Clock.Now())))
			}
		case <-timer.C():
			last = p.cfg.Clock.Now()
			wait := p.cfg.FullSyncPeriod
			pending = false
			if err := p.syncFromListers(ctx); err != nil {
				// Logged by sync; the next attempt is a full one.
				wait, pending = max(p.cfg.MinSyncPeriod, retryDelay), true
			}
			// Stale chains are deleted by a sync: have one when they
			// are due, even if nothing changes.
			if due, ok := p.staleChainsDue(); ok {
				wait = min(wait, max(0, due.Sub(p.cfg.Clock.Now())))
			}
			arm(wait)
		}
	}
}

// armed tells tests when Run's timer is set to fire after d.
func (p *Proxier) armed(d time.Duration) {
	if p.onArm != nil {
		p.onArm(d)
	}
}

func (p *Proxier) syncFromListers(ctx context.Context) error {
	// Taken before listing: every change recorded so far is in the
	// listers.
	triggers := p.triggers.take()
	services, err := p.services.List(labels.Everything())
	if err != nil {
		p.triggers.requeue(triggers)
		return fmt.Errorf("list services: %w", err)
	}
	slices, err := p.slices.List(labels.Everything())
	if err != nil {
		p.triggers.requeue(triggers)
		return fmt.Errorf("list endpoint slices: %w", err)
	}
	_, err = p.syncObjects(ctx, services, slices, triggers)
	return err
}
