package registry

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The resource metrics API (metrics.k8s.io/v1beta1), as metrics-server
// serves it: read-only, computed from the kubelets on every request and
// never stored, so not in All.

func (b *builder) nodeMetrics() *Resource {
	return &Resource{
		GVK:      metricsv1beta1.SchemeGroupVersion.WithKind("NodeMetrics"),
		Plural:   "nodes",
		Singular: "nodemetrics",
		Verbs:    []string{"get", "list"},
		New:      func() runtime.Object { return &metricsv1beta1.NodeMetrics{} },
		NewList:  func() runtime.Object { return &metricsv1beta1.NodeMetricsList{} },
		Table: table(metricsColumns, func(m *metricsv1beta1.NodeMetrics) []interface{} {
			return metricsRow(m.Name, m.Usage, m.Window)
		}),
	}
}

func (b *builder) podMetrics() *Resource {
	return &Resource{
		GVK:        metricsv1beta1.SchemeGroupVersion.WithKind("PodMetrics"),
		Plural:     "pods",
		Singular:   "podmetrics",
		Namespaced: true,
		Verbs:      []string{"get", "list"},
		New:        func() runtime.Object { return &metricsv1beta1.PodMetrics{} },
		NewList:    func() runtime.Object { return &metricsv1beta1.PodMetricsList{} },
		Table: table(metricsColumns, func(m *metricsv1beta1.PodMetrics) []interface{} {
			sum := v1.ResourceList{}
			for _, c := range m.Containers {
				for name, q := range c.Usage {
					total := sum[name]
					total.Add(q)
					sum[name] = total
				}
			}
			return metricsRow(m.Name, sum, m.Window)
		}),
	}
}

// metricsColumns are metrics-server's: the name, one column per resource
// (pods: summed over containers) and the window.
var metricsColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the resource"},
	{Name: "cpu", Type: "string", Format: "quantity"},
	{Name: "memory", Type: "string", Format: "quantity"},
	{Name: "Window", Type: "string", Format: "duration"},
}

func metricsRow(name string, usage v1.ResourceList, window metav1.Duration) []interface{} {
	cpu, mem := usage[v1.ResourceCPU], usage[v1.ResourceMemory]
	return []interface{}{name, cpu.String(), mem.String(), window.Duration.String()}
}
