// Package resourcemetrics computes the resource metrics API
// (metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics) as metrics-server
// does, for the API server to serve it built in.
//
// A Scraper reads every Ready node's kubelet /metrics/resource once per
// resolution (metrics-server's --metric-resolution, 15s by default),
// concurrently and each within a timeout, so that a node without an agent
// costs one failed request and nothing else. Decode turns the Prometheus
// text into points: cumulative CPU time, memory working set and the
// sample's timestamp for the node and each container.
//
// Storage keeps, as metrics-server's, the last and the previous point of
// every node and container. Usage is a rate between the two: CPU is the
// cumulative counter's difference over the timestamps' difference (in
// nanocores), memory the last working set; Timestamp is the last point's
// and Window the time between the two. An object with one point only
// (just after start, a new node or pod, a failed scrape) has no metrics
// yet, as with metrics-server; a container that started less than one
// resolution (but at least 10s) ago counts from its start time instead.
//
//	sc, err := resourcemetrics.New(resourcemetrics.Config{Nodes: readyNodes, Fetch: fetch})
//	go sc.Run(ctx)
//	items := sc.Storage().NodeMetrics(nodes...)
package resourcemetrics
