package stats

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/component-base/metrics"
)

// The resource metrics (/metrics/resource), as upstream's resource
// metrics collector declares them: what metrics-server scrapes for
// `kubectl top`. Values are the summary's, stamped with the time the
// runtime measured them.
var (
	nodeCPUUsageDesc = metrics.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil, metrics.STABLE, "")
	nodeMemoryUsageDesc = metrics.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil, metrics.STABLE, "")
	nodeSwapUsageDesc = metrics.NewDesc("node_swap_usage_bytes",
		"Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil, metrics.ALPHA, "")
	containerCPUUsageDesc = metrics.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", containerLabels, nil, metrics.STABLE, "")
	containerMemoryUsageDesc = metrics.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", containerLabels, nil, metrics.STABLE, "")
	containerSwapUsageDesc = metrics.NewDesc("container_swap_usage_bytes",
		"Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels, nil, metrics.ALPHA, "")
	containerStartTimeDesc = metrics.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", containerLabels, nil, metrics.STABLE, "")
	podCPUUsageDesc = metrics.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", podLabels, nil, metrics.STABLE, "")
	podMemoryUsageDesc = metrics.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", podLabels, nil, metrics.STABLE, "")
	podSwapUsageDesc = metrics.NewDesc("pod_swap_usage_bytes",
		"Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels, nil, metrics.ALPHA, "")
	// scrape_error is deprecated upstream since 1.29 in favour of
	// resource_scrape_error; component-base hides it once the binary's
	// version is past its deprecation window.
	scrapeErrorDesc = metrics.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil, metrics.ALPHA, "1.29.0")
	resourceScrapeErrorDesc = metrics.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil, metrics.STABLE, "")
)

var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}
)

// CPUAndMemoryProvider gives the resource metrics' source (*Provider).
type CPUAndMemoryProvider interface {
	CPUAndMemory(ctx context.Context) (*Summary, error)
}

// resourceCollector collects on every scrape, so that containers that
// are gone leave no stale series (which vector gauges would keep).
type resourceCollector struct {
	metrics.BaseStableCollector
	provider CPUAndMemoryProvider
	log      *slog.Logger
}

// ResourceMetricsHandler serves /metrics/resource from p, in a registry
// of its own with process_start_time_seconds, as upstream.
func ResourceMetricsHandler(p CPUAndMemoryProvider, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	r := metrics.NewKubeRegistry()
	_ = metrics.RegisterProcessStartTime(r.Register)
	r.CustomMustRegister(&resourceCollector{provider: p, log: log})
	return metrics.HandlerFor(r, metrics.HandlerOpts{ErrorHandling: metrics.ContinueOnError})
}

func (c *resourceCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc,
		containerStartTimeDesc, containerCPUUsageDesc, containerMemoryUsageDesc, containerSwapUsageDesc,
		podCPUUsageDesc, podMemoryUsageDesc, podSwapUsageDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c *resourceCollector) CollectWithStability(ch chan<- metrics.Metric) {
	var failed float64
	defer func() {
		ch <- metrics.NewLazyConstMetric(scrapeErrorDesc, metrics.GaugeValue, failed)
		ch <- metrics.NewLazyConstMetric(resourceScrapeErrorDesc, metrics.GaugeValue, failed)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	s, err := c.provider.CPUAndMemory(ctx)
	if err != nil {
		failed = 1
		c.log.Error("resource metrics: read stats", "err", err)
		return
	}
	collectNode(ch, s.Node)
	for _, pod := range s.Pods {
		for _, ctr := range pod.Containers {
			collectContainer(ch, pod, ctr)
		}
		collectPod(ch, pod)
	}
}

func collectNode(ch chan<- metrics.Metric, n NodeStats) {
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(n.CPU.Time.Time, nodeCPUUsageDesc, metrics.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- stamped(n.Memory.Time.Time, nodeMemoryUsageDesc, metrics.GaugeValue, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		ch <- stamped(n.Swap.Time.Time, nodeSwapUsageDesc, metrics.GaugeValue, float64(*n.Swap.SwapUsageBytes))
	}
}

func collectContainer(ch chan<- metrics.Metric, pod PodStats, c ContainerStats) {
	labels := []string{c.Name, pod.PodRef.Name, pod.PodRef.Namespace}
	if c.StartTime.Unix() > 0 {
		ch <- metrics.NewLazyConstMetric(containerStartTimeDesc, metrics.GaugeValue, float64(c.StartTime.UnixNano())/float64(time.Second), labels...)
	}
	if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(c.CPU.Time.Time, containerCPUUsageDesc, metrics.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), labels...)
	}
	if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
		ch <- stamped(c.Memory.Time.Time, containerMemoryUsageDesc, metrics.GaugeValue, float64(*c.Memory.WorkingSetBytes), labels...)
	}
	if c.Swap != nil && c.Swap.SwapUsageBytes != nil {
		ch <- stamped(c.Swap.Time.Time, containerSwapUsageDesc, metrics.GaugeValue, float64(*c.Swap.SwapUsageBytes), labels...)
	}
}

func collectPod(ch chan<- metrics.Metric, pod PodStats) {
	labels := []string{pod.PodRef.Name, pod.PodRef.Namespace}
	if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(pod.CPU.Time.Time, podCPUUsageDesc, metrics.CounterValue, seconds(*pod.CPU.UsageCoreNanoSeconds), labels...)
	}
	if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
		ch <- stamped(pod.Memory.Time.Time, podMemoryUsageDesc, metrics.GaugeValue, float64(*pod.Memory.WorkingSetBytes), labels...)
	}
	if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
		ch <- stamped(pod.Swap.Time.Time, podSwapUsageDesc, metrics.GaugeValue, float64(*pod.Swap.SwapUsageBytes), labels...)
	}
}

func stamped(at time.Time, d *metrics.Desc, t metrics.ValueType, v float64, labels ...string) metrics.Metric {
	return metrics.NewLazyMetricWithTimestamp(at, metrics.NewLazyConstMetric(d, t, v, labels...))
}

func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }
