package metrics

import (
	"strings"
	"time"
	"unicode"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criOperations maps CRI method names to upstream's operation_type label
// values (pkg/kubelet/metrics/cri): mostly snake case, with "podsandbox"
// as one word and UpdateContainerResources shortened.
var criOperations = map[string]string{
	"Version": "version", "Status": "status", "RuntimeConfig": "runtime_config",
	"RunPodSandbox": "run_podsandbox", "StopPodSandbox": "stop_podsandbox",
	"RemovePodSandbox": "remove_podsandbox", "PodSandboxStatus": "podsandbox_status",
	"ListPodSandbox": "list_podsandbox", "PodSandboxStats": "podsandbox_stats",
	"ListPodSandboxStats": "list_podsandbox_stats", "ListPodSandboxMetrics": "list_podsandbox_metrics",
	"UpdatePodSandboxResources": "update_podsandbox_resources",
	"CreateContainer":           "create_container", "StartContainer": "start_container",
	"StopContainer": "stop_container", "RemoveContainer": "remove_container",
	"ListContainers": "list_containers", "ContainerStatus": "container_status",
	"UpdateContainerResources": "update_container", "ReopenContainerLog": "reopen_container_log",
	"ContainerStats": "container_stats", "ListContainerStats": "list_container_stats",
	"CheckpointContainer": "checkpoint_container", "GetContainerEvents": "get_container_events",
	"ListMetricDescriptors": "list_metric_descriptors", "UpdateRuntimeConfig": "update_runtime_config",
	"ExecSync": "exec_sync", "Exec": "exec", "Attach": "attach", "PortForward": "port_forward",
	"ListImages": "list_images", "ImageStatus": "image_status", "PullImage": "pull_image",
	"RemoveImage": "remove_image", "ImageFsInfo": "image_fs_info",
}

// operationType is the label for a gRPC method name
// ("/runtime.v1.RuntimeService/ListContainers" -> "list_containers");
// calls newer than the table get plain snake case.
func operationType(method string) string {
	name := method[strings.LastIndex(method, "/")+1:]
	if op, ok := criOperations[name]; ok {
		return op
	}
	var b strings.Builder
	for i, r := range strings.ReplaceAll(name, "PodSandbox", "Podsandbox") {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// RuntimeCall records one CRI call (a runtime.CallObserver).
func (m *Metrics) RuntimeCall(method string, d time.Duration, err error) {
	op := operationType(method)
	m.kubelet.runtimeOperations.WithLabelValues(op).Inc()
	m.kubelet.runtimeDuration.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.kubelet.runtimeErrors.WithLabelValues(op).Inc()
	}
}

// PLEGRelisted records one relist (the PLEG's Relisted hook). As
// upstream, the interval is measured from the start of the last
// successful relist to the start of this one, and the last-seen gauge is
// the start of the last successful relist.
func (m *Metrics) PLEGRelisted(d time.Duration, err error) {
	start := m.now().Add(-d)
	m.kubelet.plegRelistDuration.Observe(d.Seconds())
	m.mu.Lock()
	last := m.lastRelist
	if err == nil {
		m.lastRelist = start
	}
	m.mu.Unlock()
	if !last.IsZero() {
		m.kubelet.plegRelistInterval.Observe(start.Sub(last).Seconds())
	}
	if err == nil {
		m.kubelet.plegLastSeen.Set(float64(start.Unix()))
	}
}

// containerStates are upstream's container_state values (kubecontainer
// states), indexed by CRI state.
var containerStates = map[criv1.ContainerState]string{
	criv1.ContainerState_CONTAINER_CREATED: "created",
	criv1.ContainerState_CONTAINER_RUNNING: "running",
	criv1.ContainerState_CONTAINER_EXITED:  "exited",
	criv1.ContainerState_CONTAINER_UNKNOWN: "unknown",
}

// PLEGListed sets the running pods and containers gauges from a relist
// (the PLEG's Listed hook): pods with a ready sandbox, containers by
// state. Unlike upstream, states that emptied are set to 0 rather than
// left at their last count.
func (m *Metrics) PLEGListed(sandboxes []*criv1.PodSandbox, containers []*criv1.Container) {
	pods := map[string]bool{}
	for _, sb := range sandboxes {
		if sb.State == criv1.PodSandboxState_SANDBOX_READY {
			pods[sb.GetMetadata().GetUid()] = true
		}
	}
	counts := map[string]int{}
	for _, c := range containers {
		counts[containerStates[c.State]]++
	}
	for _, state := range containerStates {
		m.kubelet.runningContainers.WithLabelValues(state).Set(float64(counts[state]))
	}
	m.kubelet.runningPods.Set(float64(len(pods)))
}
