// Package apiserver serves the Kubernetes REST API over the resources
// described by pkg/controlplane/registry, stored by
// pkg/controlplane/storage: routing, verbs (get, list, watch, create,
// update, patch, delete), discovery, Status errors and Table output, so
// that unmodified kubectl and client-go work against it.
//
// Requests are authorized by package authz's chain (system:masters, the
// node authorizer, RBAC over the bootstrap policy). Writes pass
// upstream's built-in admission, package admission, in upstream's order:
// the mutating plugins (NamespaceLifecycle, ServiceAccount,
// NodeRestriction, DefaultTolerationSeconds, DefaultStorageClass,
// RuntimeClass) before defaulting and validation, the validating ones
// (ServiceAccount, PodSecurity, RuntimeClass) after them on the final
// object. Warnings reach the client as Warning headers.
//
// ServiceAccount gives every pod but mirror pods its service account
// ("default" unless named; a missing one is refused) and, unless the pod
// or the account turns automountServiceAccountToken off, the projected
// kube-api-access-<5 chars> volume (a bound token, the kube-root-ca.crt
// config map the root CA publisher keeps, the namespace) mounted
// read-only at /var/run/secrets/kubernetes.io/serviceaccount in every
// init and regular container. NodeRestriction lets a node request tokens
// only bound to its own pods, for an audience their volumes use.
//
// Request bodies are bounded as kube-apiserver bounds them: more than
// 3 MiB is a 413 "Request entity too large: limit is 3145728"; a JSON
// patch has at most 10000 operations (413) and its copies add at most
// 3 MiB (else the patch does not apply: 422), so that no patch grows an
// object past what etcd stores. Authorization comes before a patch is
// applied, admission after, as upstream.
//
// pods/log, exec, attach, portforward and nodes/proxy go to the node's
// kubelet API (Config.Kubelet: its address from the Node's status, the
// API server's client certificate), served by package kubeletproxy: logs
// are streamed, connection upgrades proxied end to end, except that
// WebSocket (v5) exec and attach are translated to SPDY and WebSocket
// port-forward tunnels SPDY, as upstream does for kubelets that speak
// only SPDY. The OpenAPI documents are package openapi's.
//
// metrics.k8s.io/v1beta1 (nodes and pods: get and list, label and field
// selectors, Table) is served built in, as metrics-server serves it
// aggregated upstream: package resourcemetrics scrapes the Ready nodes'
// /metrics/resource with the kubelet client certificate every
// Config.MetricResolution, and the answers carry the nodes' and pods'
// labels from storage.
//
// /metrics serves Config.Metrics (the admin and system:monitoring read
// it; the admin may DELETE to reset it): apiserver_request_total and
// apiserver_request_duration_seconds with upstream's labels, storage's
// etcd_request_* metrics, the process and Go collectors, and what other
// in-process components (the scheduler) register there.
package apiserver
