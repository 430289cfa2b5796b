package storage

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func leaseOf(t *testing.T, key string) (clientv3.LeaseID, bool) {
	t.Helper()
	resp, err := testClient.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return clientv3.NoLease, false
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease), true
}

// TestTTLSharesOneLease: objects written within the reuse window of an
// hour's TTL share one lease, kept by updates; a store without a TTL
// writes no lease.
func TestTTLSharesOneLease(t *testing.T) {
	prefix := uniquePrefix(t)
	leases := NewLeases(testClient)
	s := newStore(t, func(c *Config) { c.Prefix, c.TTL, c.Leases = prefix, time.Hour, leases })
	mustCreate(t, s, configMap("default", "a", nil))
	mustCreate(t, s, configMap("default", "b", nil))
	calls := new(int32Counter)
	if _, err := s.Update(context.Background(), "default", "a", calls.bump, false); err != nil {
		t.Fatal(err)
	}
	a, _ := leaseOf(t, prefix+"/configmaps/default/a")
	b, _ := leaseOf(t, prefix+"/configmaps/default/b")
	if a == clientv3.NoLease || a != b {
		t.Errorf("leases of a (updated) and b = %x, %x; want one shared lease", a, b)
	}
	ttl, err := testClient.TimeToLive(context.Background(), a)
	if err != nil || ttl.GrantedTTL != 3600+60 {
		t.Errorf("lease granted TTL = %+v, %v; want 3660s (the TTL and its reuse window)", ttl, err)
	}

	plain := newStore(t, nil)
	mustCreate(t, plain, configMap("default", "c", nil))
	if _, err := plain.Update(context.Background(), "default", "c", calls.bump, false); err != nil {
		t.Fatal(err)
	}
	if id, ok := leaseOf(t, plain.resourcePrefix+"default/c"); !ok || id != clientv3.NoLease {
		t.Errorf("store without a TTL: lease %x (present %v), want none", id, ok)
	}
}

// TestTTLExpires: etcd deletes an object of a 2s TTL, and the watch cache
// sees it go.
func TestTTLExpires(t *testing.T) {
	s := newStore(t, func(c *Config) { c.TTL = 2 * time.Second })
	out := mustCreate(t, s, configMap("default", "short", nil))
	w := mustWatch(t, s, "default", WatchOptions{ResourceVersion: out.ResourceVersion})
	key := s.resourcePrefix + "default/short"
	if id, _ := leaseOf(t, key); id == clientv3.NoLease {
		t.Fatal("created without a lease")
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		if _, ok := leaseOf(t, key); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still in etcd after %s", key, waitTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	expectEvent(t, w, watch.Deleted, "short")
}

type int32Counter struct{ n int32 }

func (c *int32Counter) bump(existing runtime.Object) (runtime.Object, error) {
	c.n++
	cm := existing.(*v1.ConfigMap)
	cm.Data = map[string]string{"n": string(rune('0' + c.n%10))}
	return cm, nil
}
