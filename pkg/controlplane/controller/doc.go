// Package controller runs the control plane's controllers (one
// sub-package each) on one shared informer factory:
//
//   - replicaset: keeps spec.replicas pods per ReplicaSet;
//   - deployment: rolls Deployments out through ReplicaSets;
//   - garbagecollector: deletes dependents of deleted owners;
//   - nodelifecycle: marks silent nodes Unknown, taints them and evicts
//     pods that do not tolerate NoExecute taints;
//   - nodeipam: gives every node a pod CIDR out of the cluster CIDR;
//   - persistentvolume: binds PersistentVolumeClaims to PersistentVolumes
//     and releases volumes whose claims are gone;
//   - endpoint: writes the core/v1 Endpoints of services with selectors;
//   - endpointslice: writes their discovery.k8s.io/v1 EndpointSlices;
//   - rootcacert: publishes the cluster CA as the kube-root-ca.crt
//     ConfigMap in every namespace (when Options.RootCA is set);
//   - clusterroleaggregation: fills the rules of ClusterRoles with an
//     aggregationRule (admin, edit, view) from the roles they select;
//   - certificates: approves nodes' own certificate signing requests and
//     signs approved ones: kubelet serving certificates with the
//     kubelet-serving CA, client certificates with the cluster CA (when
//     Options.Certificates has its signers).
//
// Each controller reports what it does as core/v1 events with upstream's
// reasons and messages (SuccessfulCreate, ScalingReplicaSet, NodeNotReady,
// CIDRNotAvailable, ...).
//
// As kube-controller-manager with --use-service-account-credentials, the
// shared informers use the client given to Run, and Options.ClientFor
// gives each controller its own client: the service account in
// kube-system upstream's controller acts as (ServiceAccounts), bound to
// its system:controller:<name> ClusterRole.
//
// Use it from the all-in-one server once the API server is ready:
//
//	g.Go(func() error { return controller.Run(gctx, client, log.With("component", "controllers")) })
package controller
