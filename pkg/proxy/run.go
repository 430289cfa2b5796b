package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
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
	_, _ = svcInf.Informer().AddEventHandler(h)
	_, _ = sliceInf.Informer().AddEventHandler(h)
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
	services, err := p.services.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	slices, err := p.slices.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list endpoint slices: %w", err)
	}
	_, err = p.Sync(ctx, services, slices)
	return err
}
