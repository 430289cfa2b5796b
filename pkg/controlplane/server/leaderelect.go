package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election of the scheduler and the controller manager, as
// kube-scheduler's and kube-controller-manager's --leader-elect: Leases in
// kube-system named after the component, held by "<hostname>_<uuid>", with
// upstream's default timings. It runs when the store is shared (external
// etcd: several servers may run on it); the embedded etcd has one server.
const (
	leaseNamespace     = "kube-system"
	leaseDuration      = 15 * time.Second
	leaseRenewDeadline = 10 * time.Second
	leaseRetryPeriod   = 2 * time.Second
)

// elector runs components under leader election, or directly when it is
// off.
type elector struct {
	enabled  bool
	identity string
	log      *slog.Logger
}

func newElector(cfg Config, log *slog.Logger) elector {
	host, err := os.Hostname()
	if err != nil {
		host = "nodeagent-server"
	}
	// Upstream's identity: the host and a UUID per process.
	return elector{enabled: len(cfg.EtcdServers) > 0, identity: host + "_" + string(uuid.NewUUID()), log: log}
}

// run runs component while this server holds the lease name (through
// client, the component's own identity) and until ctx ends. Upstream's
// components exit when they lose the lease; here the component stops, the
// lease is released, and the server campaigns again, so that the API
// server it shares a process with keeps serving.
func (e elector) run(ctx context.Context, client kubernetes.Interface, name string, component func(context.Context) error) error {
	if !e.enabled {
		return component(ctx)
	}
	log := e.log.With("lease", leaseNamespace+"/"+name, "identity", e.identity)
	for ctx.Err() == nil {
		led, err := e.term(ctx, client, name, log, component)
		if err != nil {
			return err
		}
		if led && ctx.Err() == nil {
			log.Warn("leader election lost: the component stopped; campaigning again")
		}
	}
	return nil
}

// term campaigns once and, if elected, runs component until the lease is
// lost or ctx ends; led reports whether it was elected.
func (e elector) term(ctx context.Context, client kubernetes.Interface, name string, log *slog.Logger, component func(context.Context) error) (led bool, err error) {
	acquired, lost := make(chan struct{}), make(chan struct{})
	var once sync.Once
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: leaseNamespace, Name: name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   leaseRenewDeadline,
		RetryPeriod:     leaseRetryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { once.Do(func() { close(acquired) }) },
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != e.identity {
					log.Info("another server leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return false, fmt.Errorf("leader election %s: %w", name, err)
	}
	leCtx, cancelLE := context.WithCancel(ctx)
	defer cancelLE()
	go func() { le.Run(leCtx); close(lost) }()
	select {
	case <-acquired:
	case <-lost:
		return false, nil // ctx ended before this server was elected
	}
	log.Info("elected leader: starting")
	compCtx, stop := context.WithCancel(ctx)
	go func() {
		select {
		case <-lost:
		case <-compCtx.Done():
		}
		stop()
	}()
	err = component(compCtx)
	stop()
	// The component has stopped: release the lease (ReleaseOnCancel) so
	// that a standby takes over at once.
	cancelLE()
	<-lost
	if err != nil && ctx.Err() == nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}
