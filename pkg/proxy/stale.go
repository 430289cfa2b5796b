package proxy

import (
	"context"
	"maps"
	"slices"
	"time"

	"sigs.k8s.io/knftables"
)

// Stale chains, as kube-proxy's nftables mode handles them: a chain that
// is no longer wanted is emptied in the transaction that drops the map
// elements and rules pointing to it, and deleted in a later sync, once it
// has been unreferenced for staleChainDelay. Linux before 6.2 (Debian 12
// ships 6.1) releases the chain references of deleted map elements only
// after the transaction has committed, so a transaction that deletes both
// an element and the chain it pointed to fails with EBUSY; a flushed,
// unreferenced chain is harmless meanwhile.
const (
	// staleChainDelay is how long a stale chain is left before it is
	// deleted (kube-proxy waits a second).
	staleChainDelay = time.Second
	// maxStaleChainBackoff bounds the wait between failed deletions: EBUSY
	// means the kernel has not released the chain yet, so retrying later
	// is the remedy, but not every second forever.
	maxStaleChainBackoff = time.Minute
)

// deleteStaleChains deletes, in a transaction of their own, the stale
// chains whose delay has passed, except those this sync writes again
// (changes' new objects). A failure only delays them: it is logged and
// counted, and they are tried again after a growing backoff. The caller
// holds p.mu.
func (p *Proxier) deleteStaleChains(ctx context.Context, now time.Time, changes []portChange, res *SyncResult) {
	var due []string
	for name, at := range p.stale {
		if !now.Before(at) {
			due = append(due, name)
		}
	}
	if len(due) == 0 {
		return
	}
	written := rewritten(changes)
	due = slices.DeleteFunc(due, func(name string) bool { return written[name] })
	if len(due) == 0 {
		return
	}
	slices.Sort(due)
	tx := p.nft.NewTransaction()
	for _, name := range due {
		// "add" first: a chain someone else deleted does not fail the
		// transaction.
		tx.Add(&knftables.Chain{Name: name})
		tx.Delete(&knftables.Chain{Name: name})
	}
	if err := p.nft.Run(ctx, tx); err != nil {
		p.staleBackoff = min(max(2*p.staleBackoff, staleChainDelay), maxStaleChainBackoff)
		for _, name := range due {
			p.stale[name] = now.Add(p.staleBackoff)
		}
		p.cfg.Metrics.cleanupFailed()
		p.log.Warn("delete stale chains; will retry", "chains", len(due), "retryIn", p.staleBackoff, "err", err)
		return
	}
	p.staleBackoff = 0
	for _, name := range due {
		delete(p.stale, name)
	}
	res.DeletedChains = len(due)
}

// rewritten is the set of chains changes write.
func rewritten(changes []portChange) map[string]bool {
	out := make(map[string]bool)
	for _, c := range changes {
		if c.cur != nil {
			for name := range c.cur.chains {
				out[name] = true
			}
		}
	}
	return out
}

// markStale records, after a successful sync, the chains it emptied
// (gone) for deletion after staleChainDelay. Chains the sync wrote are no
// longer stale. A full sync's gone lists every chain of the table that is
// not wanted: it replaces the record, which drops chains someone else
// deleted. The caller holds p.mu.
func (p *Proxier) markStale(now time.Time, gone []string, changes []portChange, full bool) {
	due := now.Add(staleChainDelay)
	if full {
		stale := make(map[string]time.Time, len(gone))
		for _, name := range gone {
			if at, ok := p.stale[name]; ok {
				stale[name] = at
			} else {
				stale[name] = due
			}
		}
		p.stale = stale
		return
	}
	for _, name := range gone {
		p.stale[name] = due
	}
	for _, c := range changes {
		for name := range c.cur.chains {
			delete(p.stale, name)
		}
	}
}

// staleChainsDue returns when the next stale chain may be deleted: Run
// syncs then, so that stale chains go even when nothing else changes.
func (p *Proxier) staleChainsDue() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.stale) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(slices.Collect(maps.Values(p.stale)), time.Time.Compare), true
}
