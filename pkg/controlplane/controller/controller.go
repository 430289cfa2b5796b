package controller

import (
	"context"
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
	// First: the constructors that can fail (on their configuration).
	ipam, err := nodeipam.New(client, factory, opts.NodeIPAM, log.With("controller", "nodeipam"))
	if err != nil {
		return err
	}
	var certs *certificates.Controller
	if opts.Certificates != (certificates.Config{}) {
		if certs, err = certificates.New(client, factory, opts.Certificates, log.With("controller", "certificates")); err != nil {
			return err
		}
	}
	rs := replicaset.New(client, factory, log.With("controller", "replicaset"))
	dep := deployment.New(client, factory, log.With("controller", "deployment"))
	gc := garbagecollector.New(client, factory, log.With("controller", "garbagecollector"))
	nl := nodelifecycle.New(client, factory, opts.NodeLifecycle, log.With("controller", "nodelifecycle"))
	pv := persistentvolume.New(client, factory, opts.PersistentVolume, log.With("controller", "persistentvolume"))
	ep := endpoint.New(client, factory, log.With("controller", "endpoint"))
	eps := endpointslice.New(client, factory, log.With("controller", "endpointslice"))
	cra := clusterroleaggregation.New(client, factory, log.With("controller", "clusterrole-aggregation"))
	var rootCA *rootcacert.Publisher
	if len(opts.RootCA) > 0 {
		rootCA = rootcacert.New(client, factory, opts.RootCA, log.With("controller", "root-ca-cert-publisher"))
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
