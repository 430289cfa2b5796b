// Package rootcacert is the root CA certificate publisher, as
// kube-controller-manager's root-ca-cert-publisher
// (pkg/controller/certificates/rootcacertpublisher): every namespace has a
// ConfigMap "kube-root-ca.crt" whose ca.crt is the cluster CA, so that pods
// verify the API server they reach through kubernetes.default.svc (the
// ServiceAccount admission projects it into every pod at
// /var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
//
// The map is created when a namespace appears, created again when it is
// deleted, and put back when its data or its kubernetes.io/description
// annotation changes: as upstream, the whole data is replaced (keys a user
// added go) and other annotations stay. Terminating namespaces are left
// alone. Every namespace is checked again on the informers' periodic
// resync.
//
// Use:
//
//	p := rootcacert.New(client, factory, caPEM, log)
//	factory.Start(ctx.Done())
//	err := p.Run(ctx, 1)
package rootcacert
