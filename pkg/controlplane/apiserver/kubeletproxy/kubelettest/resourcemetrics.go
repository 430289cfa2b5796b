package kubelettest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Load is a constant resource use: CPU in millicores, memory working set
// in bytes.
type Load struct {
	MilliCores  int64
	MemoryBytes int64
}

// ContainerLoad is one container's Load.
type ContainerLoad struct {
	Namespace, Pod, Container string
	Load
}

// DefaultNodeLoad is what a fake node reports until SetLoad: 250m, 512Mi.
var DefaultNodeLoad = Load{MilliCores: 250, MemoryBytes: 512 << 20}

// SetLoad makes /metrics/resource report the node and containers as
// busy at these loads since the fake started: cumulative CPU grows by
// MilliCores per second, so any two scrapes give that rate exactly.
func (s *Server) SetLoad(node Load, containers ...ContainerLoad) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodeLoad, s.containerLoads = node, append([]ContainerLoad(nil), containers...)
}

// serveResourceMetrics answers /metrics/resource as the kubelet does.
func (s *Server) serveResourceMetrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	node, containers := s.nodeLoad, s.containerLoads
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, ResourceMetrics(s.started, time.Now(), node, containers...))
}

// ResourceMetrics renders the kubelet's /metrics/resource at now for loads
// running since start. Times are whole milliseconds and CPU whole
// nanoseconds, so that rates between two renderings are exact.
func ResourceMetrics(start, now time.Time, node Load, containers ...ContainerLoad) string {
	start, now = start.Truncate(time.Millisecond), now.Truncate(time.Millisecond)
	elapsedMs := now.Sub(start).Milliseconds()
	ts := now.UnixMilli()
	cpu := func(l Load) string { return seconds(l.MilliCores * elapsedMs * 1000) }
	var b strings.Builder
	family(&b, "container_cpu_usage_seconds_total", "counter", containers, func(c ContainerLoad) string {
		return fmt.Sprintf("%s %d", cpu(c.Load), ts)
	})
	family(&b, "container_memory_working_set_bytes", "gauge", containers, func(c ContainerLoad) string {
		return fmt.Sprintf("%d %d", c.MemoryBytes, ts)
	})
	family(&b, "container_start_time_seconds", "gauge", containers, func(ContainerLoad) string {
		return seconds(start.UnixNano())
	})
	fmt.Fprintf(&b, "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %s %d\n", cpu(node), ts)
	fmt.Fprintf(&b, "# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %d %d\n", node.MemoryBytes, ts)
	b.WriteString("# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n")
	return b.String()
}

// family writes one metric family with a series per container, sorted.
func family(b *strings.Builder, name, typ string, cs []ContainerLoad, value func(ContainerLoad) string) {
	if len(cs) == 0 {
		return
	}
	lines := make([]string, 0, len(cs))
	for _, c := range cs {
		lines = append(lines, fmt.Sprintf("%s{container=%q,namespace=%q,pod=%q} %s\n", name, c.Container, c.Namespace, c.Pod, value(c)))
	}
	sort.Strings(lines)
	fmt.Fprintf(b, "# TYPE %s %s\n%s", name, typ, strings.Join(lines, ""))
}

// seconds prints nanoseconds as seconds, as the kubelet does.
func seconds(ns int64) string { return fmt.Sprintf("%g", float64(ns)/1e9) }
