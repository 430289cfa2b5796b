package apiclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The kubelet's node lease: 40 s, renewed every quarter of it.
const (
	LeaseNamespace        = "kube-node-lease"
	DefaultLeaseDuration  = 40 * time.Second
	leaseRenewFraction    = 4
	leaseRetryMaxInterval = 7 * time.Second
)

// LeaseConfig configures Lease; Client and NodeName are required.
type LeaseConfig struct {
	Client   kubernetes.Interface
	NodeName string
	Duration time.Duration // default 40s; renewed every Duration/4
	Logger   *slog.Logger
	Now      func() time.Time
}

// Lease is the node heartbeat: the Lease <node> in kube-node-lease, held
// by the node and owned by its Node object.
type Lease struct {
	cfg LeaseConfig
	log *slog.Logger
}

// NewLease checks cfg and applies the defaults.
func NewLease(cfg LeaseConfig) (*Lease, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("apiclient: lease needs Client and NodeName")
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultLeaseDuration
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Lease{cfg: cfg, log: cfg.Logger.With("component", "lease")}, nil
}

// Run renews the lease every Duration/4 (sooner after a failure) until
// ctx ends.
func (l *Lease) Run(ctx context.Context) error {
	interval := l.cfg.Duration / leaseRenewFraction
	retry := 200 * time.Millisecond
	for {
		next := interval
		if err := l.renew(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.log.Warn("renew node lease", "err", err, "retryIn", retry)
			next, retry = retry, min(2*retry, leaseRetryMaxInterval)
		} else {
			retry = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// renew creates or updates the lease once.
func (l *Lease) renew(ctx context.Context) error {
	leases := l.cfg.Client.CoordinationV1().Leases(LeaseNamespace)
	cur, err := leases.Get(ctx, l.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.cfg.NodeName, Namespace: LeaseNamespace}}
		l.fill(ctx, lease)
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease: %w", err)
	}
	l.fill(ctx, cur)
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update lease: %w", err) // a conflict is retried on the next round
	}
	return nil
}

// fill sets holder, duration and renew time, and the owner reference to
// the Node once the Node exists (as the kubelet does).
func (l *Lease) fill(ctx context.Context, lease *coordv1.Lease) {
	holder, secs := l.cfg.NodeName, int32(l.cfg.Duration/time.Second)
	now := metav1.NewMicroTime(l.cfg.Now())
	lease.Spec.HolderIdentity = &holder
	lease.Spec.LeaseDurationSeconds = &secs
	lease.Spec.RenewTime = &now
	if len(lease.OwnerReferences) > 0 {
		return
	}
	node, err := l.cfg.Client.CoreV1().Nodes().Get(ctx, l.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return // not registered yet: set on a later renewal
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}}
}
