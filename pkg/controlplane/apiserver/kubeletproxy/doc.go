// Package kubeletproxy serves what the API server passes to the nodes'
// kubelet API: pods/log (streamed), pods/exec, attach and portforward
// (connection upgrades proxied end to end, WebSocket v5 exec and attach
// translated to SPDY, WebSocket port-forward tunnelled over SPDY) and
// nodes/proxy, with the API server's kubelet client certificate (Client,
// from ClientConfig). Client.ResourceMetrics is the scrape of a node's
// /metrics/resource for metrics.k8s.io.
//
// The core builds a Proxy per request, after authenticating and
// authorizing it, when IsConnect says the request is one of these, and
// hands it the request info. The Proxy reads pods and nodes through
// PodGetter and NodeGetter and makes the secondary "create" check of
// pod streams through Authorizer: interfaces the core implements over
// its storage and authorizer. kubelettest is a fake kubelet for tests.
package kubeletproxy
