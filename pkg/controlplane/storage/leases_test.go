package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type fakeGranter struct {
	ttls []int64
	fail bool
}

func (f *fakeGranter) grant(_ context.Context, ttl int64) (clientv3.LeaseID, error) {
	if f.fail {
		return clientv3.NoLease, errors.New("etcdserver: no space")
	}
	f.ttls = append(f.ttls, ttl)
	return clientv3.LeaseID(len(f.ttls)), nil
}

func TestLeasesReuseOneLeasePerWindow(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := &fakeGranter{}
	l := newLeases(g.grant, func() time.Time { return now })
	const hour = 3600 // the --event-ttl default: a window of 60s (5% is 180s)

	first, err := l.Get(t.Context(), hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.ttls) != 1 || g.ttls[0] != hour+60 {
		t.Fatalf("granted %v, want one lease of %d", g.ttls, hour+60)
	}
	// A clock that has not moved does not reuse (upstream's After).
	for _, step := range []time.Duration{time.Nanosecond, time.Second, 30 * time.Second, 59 * time.Second} {
		now = time.Unix(1_000_000, 0).Add(step)
		id, err := l.Get(t.Context(), hour)
		if err != nil || id != first {
			t.Errorf("after %s: lease %d, %v; want the first (%d) reused", step, id, err, first)
		}
	}
	now = time.Unix(1_000_000, 0).Add(61 * time.Second)
	second, err := l.Get(t.Context(), hour)
	if err != nil || second == first {
		t.Fatalf("after the window: lease %d, %v; want a new one", second, err)
	}
	if len(g.ttls) != 2 {
		t.Errorf("granted %v, want two leases", g.ttls)
	}
}

func TestLeasesAtMostThousandObjects(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := &fakeGranter{}
	l := newLeases(g.grant, func() time.Time { return now })
	for range leaseMaxAttachedCount {
		now = now.Add(time.Millisecond)
		if _, err := l.Get(t.Context(), 3600); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.ttls) != 1 {
		t.Fatalf("%d objects: granted %d leases, want 1", leaseMaxAttachedCount, len(g.ttls))
	}
	now = now.Add(time.Millisecond)
	id, err := l.Get(t.Context(), 3600)
	if err != nil || id != 2 || len(g.ttls) != 2 {
		t.Errorf("object %d: lease %d, %v, grants %v; want a second lease", leaseMaxAttachedCount+1, id, err, g.ttls)
	}
}

func TestLeasesShortTTLHasNoWindow(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := &fakeGranter{}
	l := newLeases(g.grant, func() time.Time { return now })
	for range 3 {
		if _, err := l.Get(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
	}
	// 5% of 2s rounds down to no window: a lease that expires exactly
	// when the next write's would may not be reused (upstream's Before).
	if len(g.ttls) != 3 || g.ttls[0] != 2 {
		t.Errorf("granted %v, want three leases of 2s", g.ttls)
	}
}

func TestLeasesGrantFailure(t *testing.T) {
	g := &fakeGranter{fail: true}
	l := newLeases(g.grant, time.Now)
	if id, err := l.Get(t.Context(), 60); err == nil || id != clientv3.NoLease {
		t.Errorf("Get = %d, %v; want the grant's error", id, err)
	}
	g.fail = false
	if id, err := l.Get(t.Context(), 60); err != nil || id == clientv3.NoLease {
		t.Errorf("Get after the failure = %d, %v; want a lease", id, err)
	}
}
