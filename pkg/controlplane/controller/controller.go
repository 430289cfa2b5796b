package controller

import (
	"context"
	"fmt"
	"log/slog"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/certificates"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/clusterroleaggregation"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/deployment"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/endpoint"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/endpointslice"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/garbagecollector"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/nodeipam"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/nodelifecycle"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/persistentvolume"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/replicaset"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/rootcacert"
)

// Options tunes Run; the zero value takes upstream's defaults.
type Options struct {
	NodeLifecycle nodelifecycle.Config
	// NodeIPAM is the cluster CIDR pod CIDRs are taken from (default
	// 10.244.0.0/16 in /24 blocks).
	NodeIPAM nodeipam.Config
	// PersistentVolume tunes the binder's resync period.
	PersistentVolume persistentvolume.Config
	// RootCA is the cluster CA bundle (PEM) published in every namespace
	// as kube-root-ca.crt, upstream's --root-ca-file; nil runs no
	// publisher (there is nothing to publish).
	RootCA []byte
	// Certificates are the CAs that sign approved certificate signing
	// requests; without signers no certificate approver and signer runs.
	Certificates certificates.Config
	// ClientFor is the API client of the controller that acts as the
	// service account kube-system/name (one of the ServiceAccount*
	// names), as kube-controller-manager's client builder with
	// --use-service-account-credentials. The shared informers keep the
	// client given to RunWithOptions (the controller manager's own
	// identity). Nil: every controller uses that client too.
	ClientFor func(name string) (kubernetes.Interface, error)
}

// The service accounts in kube-system that upstream's controllers act as
// (cmd/kube-controller-manager/app, ClientBuilder.ClientOrDie); each is
// bound to the ClusterRole system:controller:<name>.
const (
	ServiceAccountReplicaSet             = "replicaset-controller"
	ServiceAccountDeployment             = "deployment-controller"
	ServiceAccountGarbageCollector       = "generic-garbage-collector"
	ServiceAccountNode                   = "node-controller" // node lifecycle and node IPAM
	ServiceAccountPersistentVolume       = "persistent-volume-binder"
	ServiceAccountEndpoint               = "endpoint-controller"
	ServiceAccountEndpointSlice          = "endpointslice-controller"
	ServiceAccountClusterRoleAggregation = "clusterrole-aggregation-controller"
	ServiceAccountRootCACertPublisher    = "root-ca-cert-publisher"
	ServiceAccountCertificate            = "certificate-controller" // CSR approving, signing, cleaning
)

// ServiceAccounts are the names ClientFor is called with.
func ServiceAccounts() []string {
	return []string{ServiceAccountReplicaSet, ServiceAccountDeployment, ServiceAccountGarbageCollector,
		ServiceAccountNode, ServiceAccountPersistentVolume, ServiceAccountEndpoint, ServiceAccountEndpointSlice,
		ServiceAccountClusterRoleAggregation, ServiceAccountRootCACertPublisher, ServiceAccountCertificate}
}

// Run runs every controller until ctx ends or one fails.
func Run(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	return RunWithOptions(ctx, client, log, Options{})
}

// RunWithOptions is Run with tuning (tests shorten the node grace period).
func RunWithOptions(ctx context.Context, client kubernetes.Interface, log *slog.Logger, opts Options) error {
	if log == nil {
		log = slog.Default()
	}
	factory := informers.NewSharedInformerFactory(client, ctrlutil.Resync)
	clientsFor := make(map[string]kubernetes.Interface)
	for _, name := range ServiceAccounts() {
		clientsFor[name] = client
		if opts.ClientFor == nil {
			continue
		}
		c, err := opts.ClientFor(name)
		if err != nil {
			return fmt.Errorf("client for service account kube-system/%s: %w", name, err)
		}
		clientsFor[name] = c
	}
	// First: the constructors that can fail (on their configuration).
	ipam, err := nodeipam.New(clientsFor[ServiceAccountNode], factory, opts.NodeIPAM, log.With("controller", "nodeipam"))
	if err != nil {
		return err
	}
	var certs *certificates.Controller
	if opts.Certificates.ServingSigner != nil || opts.Certificates.ClientSigner != nil {
		if certs, err = certificates.New(clientsFor[ServiceAccountCertificate], factory, opts.Certificates, log.With("controller", "certificates")); err != nil {
			return err
		}
	}
	rs := replicaset.New(clientsFor[ServiceAccountReplicaSet], factory, log.With("controller", "replicaset"))
	dep := deployment.New(clientsFor[ServiceAccountDeployment], factory, log.With("controller", "deployment"))
	gc := garbagecollector.New(clientsFor[ServiceAccountGarbageCollector], factory, log.With("controller", "garbagecollector"))
	nl := nodelifecycle.New(clientsFor[ServiceAccountNode], factory, opts.NodeLifecycle, log.With("controller", "nodelifecycle"))
	pv := persistentvolume.New(clientsFor[ServiceAccountPersistentVolume], factory, opts.PersistentVolume, log.With("controller", "persistentvolume"))
	ep := endpoint.New(clientsFor[ServiceAccountEndpoint], factory, log.With("controller", "endpoint"))
	eps := endpointslice.New(clientsFor[ServiceAccountEndpointSlice], factory, log.With("controller", "endpointslice"))
	cra := clusterroleaggregation.New(clientsFor[ServiceAccountClusterRoleAggregation], factory, log.With("controller", "clusterrole-aggregation"))
	var rootCA *rootcacert.Publisher
	if len(opts.RootCA) > 0 {
		rootCA = rootcacert.New(clientsFor[ServiceAccountRootCACertPublisher], factory, opts.RootCA, log.With("controller", "root-ca-cert-publisher"))
	}

	g, gctx := errgroup.WithContext(ctx)
	factory.Start(gctx.Done())
	defer factory.Shutdown() // after the workers: wait for the informers to stop
	g.Go(func() error { return rs.Run(gctx, 2) })
	g.Go(func() error { return dep.Run(gctx, 2) })
	g.Go(func() error { return gc.Run(gctx, 2) })
	g.Go(func() error { return nl.Run(gctx) })
	g.Go(func() error { return ipam.Run(gctx) })
	g.Go(func() error { return pv.Run(gctx) })
	g.Go(func() error { return ep.Run(gctx, 2) })
	g.Go(func() error { return eps.Run(gctx, 2) })
	g.Go(func() error { return cra.Run(gctx, clusterroleaggregation.Workers) })
	if rootCA != nil {
		g.Go(func() error { return rootCA.Run(gctx, 1) })
	}
	if certs != nil {
		g.Go(func() error { return certs.Run(gctx, 1) })
	}
	return g.Wait()
}
