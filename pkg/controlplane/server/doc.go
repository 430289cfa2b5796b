// Package server assembles the bundled control plane behind
// `nodeagent server`: the PKI, etcd (embedded or external), the API server
// the scheduler, the controllers and the cluster DNS. This host's node agent
// is not part of it: the all-in-one `nodeagent server` runs one beside it.
//
//	err := server.Run(ctx, server.Config{DataDir: "/var/lib/nodeagent"})
//
// Run starts the components in order, each gated on the previous one being
// ready (PKI and admin kubeconfig → etcd → API server → HTTPS listener), and
// stops them in reverse order when ctx ends or one of them fails. The data
// directory holds:
//
//	pki/               CA, serving and admin certificates (see package pki)
//	etcd/              the embedded etcd member
//	admin.kubeconfig   cluster-admin credentials for kubectl (0600)
//	tokens.csv         optional static bearer tokens: token,user,uid,"group1,group2"
//
// Authentication sits in front of the API server: a client certificate
// verified against the CA gives user CN and groups O; otherwise a bearer
// token from tokens.csv, a service account token, or a bootstrap token
// (kube-system/bootstrap-token-<id> secrets, as kube-apiserver's
// --enable-bootstrap-token-auth: system:bootstrap:<id> in
// system:bootstrappers); otherwise 401 with a Status body (anonymous access
// is off). After the bootstrap RBAC policy, the rbac/bootstrap-roles hook
// creates the bindings kubeadm creates for joining nodes (joinBindings), so
// that the tokens of `nodeagent server token create` (CreateJoinToken) get
// node client certificates approved. Behind authentication, package inflight bounds the requests
// served at once (Config.MaxRequestsInFlight, MaxMutatingRequestsInFlight:
// kube-apiserver's flags, 429 past them). /healthz, /livez and /readyz answer anyone, as kube-apiserver's
// probe endpoints do; /readyz fails until etcd and the API server are ready
// and whenever etcd stops answering.
//
// The controllers start once the bootstrap RBAC policy is reconciled and
// act as kube-controller-manager with --use-service-account-credentials:
// their shared informers as system:kube-controller-manager (a client
// certificate issued in memory), each controller with a bound token of
// its service account in kube-system (created when missing, renewed
// before it expires). The scheduler, the cluster DNS and the built-in
// endpoints use the admin identity.
package server
