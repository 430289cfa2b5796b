package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The lease endpoint reconciler's figures (kube-apiserver's
// --endpoint-reconciler-type=lease): every server renews its own lease
// every builtinReconcileInterval with this TTL, so one that stops without
// removing it drops out of default/kubernetes within TTL plus an interval.
const (
	serverLeaseTTL    = 15 * time.Second
	serverLeasePrefix = "/registry/masterleases/"
)

// serverLease is what a live server records of itself: where pods reach
// its API and its DNS ("" when it serves none).
type serverLease struct {
	APIIP string `json:"apiIP"`
	DNSIP string `json:"dnsIP,omitempty"`
}

// serverLeases are the servers' leases in etcd, one key per API address
// under serverLeasePrefix, as upstream's storage-backed lease reconciler.
type serverLeases struct {
	cli *clientv3.Client
	ttl time.Duration
}

// renew records self with a fresh TTL.
func (l serverLeases) renew(ctx context.Context, self serverLease) error {
	grant, err := l.cli.Grant(ctx, int64(l.ttl/time.Second))
	if err != nil {
		return fmt.Errorf("server lease: grant: %w", err)
	}
	data, err := json.Marshal(self)
	if err != nil {
		return err
	}
	if _, err := l.cli.Put(ctx, serverLeasePrefix+self.APIIP, string(data), clientv3.WithLease(grant.ID)); err != nil {
		return fmt.Errorf("server lease: put: %w", err)
	}
	return nil
}

// remove drops self's lease, as a server does when it stops.
func (l serverLeases) remove(ctx context.Context, apiIP string) error {
	if _, err := l.cli.Delete(ctx, serverLeasePrefix+apiIP); err != nil {
		return fmt.Errorf("server lease: delete: %w", err)
	}
	return nil
}

// live are the servers whose leases have not expired, by API address.
func (l serverLeases) live(ctx context.Context) ([]serverLease, error) {
	resp, err := l.cli.Get(ctx, serverLeasePrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("server leases: %w", err)
	}
	var out []serverLease
	for _, kv := range resp.Kvs {
		var s serverLease
		if err := json.Unmarshal(kv.Value, &s); err != nil || s.APIIP != strings.TrimPrefix(string(kv.Key), serverLeasePrefix) {
			continue // not one of ours: another writer's key is no server
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b serverLease) int { return strings.Compare(a.APIIP, b.APIIP) })
	return out, nil
}
