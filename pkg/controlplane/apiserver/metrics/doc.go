// Package metrics is the API server's own instrumentation: the request
// metrics kube-apiserver has (apiserver_request_total and
// apiserver_request_duration_seconds, upstream's names, labels and
// buckets), the registry /metrics serves (NewRegistry: the process and
// Go collectors besides) and the /metrics endpoint (GET, DELETE to reset).
//
// The core makes one Requests per server, registers it, wraps every
// resource request in Requests.Instrument (and the health checks in
// InstrumentPath), and tries Endpoint.Serve before its routes. Who may
// read or reset the metrics is not this package's to decide: the core
// gives NewEndpoint its authorization check.
package metrics
