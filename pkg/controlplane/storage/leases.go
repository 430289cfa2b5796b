package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Upstream's lease reuse (k8s.io/apiserver storage/etcd3 lease_manager.go):
// a lease is reused for at most min(60s, 5% of the TTL) of writes and at
// most 1000 objects, so that objects with a TTL cost one lease per window
// rather than one lease each.
const (
	leaseReuseMaxSeconds  = 60
	leaseReusePercent     = 0.05
	leaseMaxAttachedCount = 1000
)

// grantFunc asks etcd for a lease of ttl seconds.
type grantFunc func(ctx context.Context, ttl int64) (clientv3.LeaseID, error)

// Leases hands out etcd leases for objects with a TTL, reusing the
// previous lease while it expires within the reuse window of the TTL.
// One Leases may be shared by the stores of one resource served under
// two APIs (core and events.k8s.io events).
type Leases struct {
	grant grantFunc
	now   func() time.Time

	mu       sync.Mutex
	prevID   clientv3.LeaseID
	prevEnds time.Time // when prevID expires
	attached int64     // objects given prevID, counting failed writes
}

// NewLeases returns a lease manager granting through cli.
func NewLeases(cli *clientv3.Client) *Leases {
	return newLeases(func(ctx context.Context, ttl int64) (clientv3.LeaseID, error) {
		resp, err := cli.Grant(ctx, ttl)
		if err != nil {
			return clientv3.NoLease, err
		}
		return resp.ID, nil
	}, time.Now)
}

func newLeases(grant grantFunc, now func() time.Time) *Leases {
	return &Leases{grant: grant, now: now}
}

// Get returns a lease that expires no earlier than ttl seconds from now
// and no later than the reuse window after that: the previous one when it
// still fits and has fewer than 1000 objects, else a new one granted for
// ttl plus the window (so that it fits the writes of the next window).
func (l *Leases) Get(ctx context.Context, ttl int64) (clientv3.LeaseID, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	window := reuseWindow(ttl)
	earliest := now.Add(time.Duration(ttl) * time.Second)
	latest := now.Add(time.Duration(ttl+window) * time.Second)
	l.attached++
	if l.prevID != clientv3.NoLease && earliest.Before(l.prevEnds) && latest.After(l.prevEnds) &&
		l.attached <= leaseMaxAttachedCount {
		return l.prevID, nil
	}
	id, err := l.grant(ctx, ttl+window)
	if err != nil {
		return clientv3.NoLease, fmt.Errorf("grant an etcd lease of %ds: %w", ttl+window, err)
	}
	l.prevID, l.prevEnds, l.attached = id, now.Add(time.Duration(ttl+window)*time.Second), 1
	return id, nil
}

// reuseWindow is how many seconds a lease for ttl is reused.
func reuseWindow(ttl int64) int64 {
	return min(int64(leaseReusePercent*float64(ttl)), leaseReuseMaxSeconds)
}
