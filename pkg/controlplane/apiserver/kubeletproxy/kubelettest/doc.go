// Package kubelettest is a fake kubelet API for tests of the API server's
// proxying: an HTTPS server that records what reaches it (path, query,
// client certificate, upgrade headers) and answers /containerLogs,
// /exec, /attach and /portForward (SPDY, as container runtimes' streaming
// servers do), /healthz, /metrics and /metrics/resource (a constant load,
// see SetLoad).
//
// Use it like httptest: New, then point a Node's status at Host and Port.
package kubelettest
