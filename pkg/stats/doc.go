// Package stats computes the node's resource usage for the kubelet's
// summary API (/stats/summary) and resource metrics (/metrics/resource),
// the endpoints metrics-server, `kubectl top` and monitoring read.
//
// Pods and containers come from the CRI: ListPodSandbox and ListContainers
// for what runs, ListContainerStats for the containers' usage. A pod's own
// CPU and memory come from its pod cgroup (Config.PodCgroups: cpuacct.usage
// or cpu.stat, memory usage less inactive file pages, v1 and v2), as the
// kubelet reads them through cAdvisor when PodAndContainerStatsFromCRI is
// off, its default. ListPodSandboxStats is asked only for the full
// summary's pod network, or for the usage when there are no pod cgroups
// (cgroupsPerQOS off). containerd 1.6 has the call, but it costs a cgroup
// read, a network namespace visit and shim calls per pod, and fails as a
// whole while any sandbox is half made or going (a pod start burst): pods
// then sum their containers. The node comes from the host, the
// files cAdvisor reads for the kubelet's root container: the cgroup v1
// root (cpuacct.usage, memory.usage_in_bytes, memory.stat), falling back
// to /proc/stat and /proc/meminfo, plus /proc/net/dev, statfs on the
// agent's root directory and, for the image filesystem, CRI ImageFsInfo.
// CPU rates (usageNanoCores) the runtime does not give are computed from
// the previous sample of the same object.
//
// Use:
//
//	p, _ := stats.New(stats.Config{NodeName: node, Runtime: criClient, ImageFs: criClient, RootDir: rootDir})
//	mux.Handle("GET /stats/summary", stats.SummaryHandler(p, log))
//	mux.Handle("GET /metrics/resource", stats.ResourceMetricsHandler(p, log))
package stats
