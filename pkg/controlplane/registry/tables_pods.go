package registry

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

var podColumns = []metav1.TableColumnDefinition{
	nameColumn,
	col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
	col("Status", "string", "The aggregate status of the containers in this pod."),
	col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	ageColumn,
	wideCol("IP", "string", v1.PodStatus{}.SwaggerDoc()["podIP"]),
	wideCol("Node", "string", v1.PodSpec{}.SwaggerDoc()["nodeName"]),
	wideCol("Nominated Node", "string", v1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
	wideCol("Readiness Gates", "string", v1.PodSpec{}.SwaggerDoc()["readinessGates"]),
}

// nodeUnreachablePodReason is the status reason the node lifecycle
// controller gives pods of an unreachable node.
const nodeUnreachablePodReason = "NodeLost"

func podCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	return podutil.Condition(&pod.Status, t)
}

// podRow prints a pod as kubectl get pods does: READY counts ready regular
// containers and started sidecars, STATUS is the most telling reason
// (init progress, a waiting or terminated reason, Terminating ...).
func (b *builder) podRow(pod *v1.Pod) []interface{} {
	restarts, sidecarRestarts := 0, 0
	var lastRestart, lastSidecarRestart metav1.Time
	total := len(pod.Spec.Containers)
	ready := 0

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}

	inits := map[string]*v1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		inits[c.Name] = c
		if podutil.IsSidecar(c) {
			total++
		}
	}
	later := func(last *metav1.Time, st v1.ContainerStatus) {
		if t := st.LastTerminationState.Terminated; t != nil && last.Before(&t.FinishedAt) {
			*last = t.FinishedAt
		}
	}

	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		later(&lastRestart, st)
		sidecar := podutil.IsSidecar(inits[st.Name])
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
			later(&lastSidecarRestart, st)
		}
		term := st.State.Terminated
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecar && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + st.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if c := podCondition(pod, v1.PodInitialized); !initializing || (c != nil && c.Status == v1.ConditionTrue) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			later(&lastRestart, st)
			switch w, t := st.State.Waiting, st.State.Terminated; {
			case w != nil && w.Reason != "":
				reason = w.Reason
			case t != nil && t.Reason != "":
				reason = t.Reason
			case t != nil && t.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A container still running means the pod is not Completed.
		if reason == "Completed" && hasRunning {
			if c := podCondition(pod, v1.PodReady); c != nil && c.Status == v1.ConditionTrue {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}

	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, b.since(lastRestart.Time))
	}

	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			if c := podCondition(pod, g.ConditionType); c != nil && c.Status == v1.ConditionTrue {
				trueGates++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
	}
	return []interface{}{
		pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsStr, b.age(pod.ObjectMeta),
		orNone(podIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
	}
}

var nodeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	col("Status", "string", "The status of the node"),
	col("Roles", "string", "The roles of the node"),
	ageColumn,
	col("Version", "string", v1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
	wideCol("Internal-IP", "string", v1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideCol("External-IP", "string", v1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideCol("OS-Image", "string", v1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
	wideCol("Kernel-Version", "string", v1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
	wideCol("Container-Runtime", "string", v1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
}

// Node role labels: node-role.kubernetes.io/<role> and kubernetes.io/role=<role>.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	nodeLabelRole       = "kubernetes.io/role"
)

func nodeRoles(node *v1.Node) string {
	set := map[string]bool{}
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				set[role] = true
			}
		case k == nodeLabelRole && v != "":
			set[v] = true
		}
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return orNone(strings.Join(roles, ","))
}

func nodeAddress(node *v1.Node, t v1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func (b *builder) nodeRow(node *v1.Node) []interface{} {
	var status []string
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status == v1.ConditionTrue {
				status = append(status, "Ready")
			} else {
				status = append(status, "NotReady")
			}
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := node.Status.NodeInfo
	return []interface{}{
		node.Name, strings.Join(status, ","), nodeRoles(node), b.age(node.ObjectMeta), info.KubeletVersion,
		nodeAddress(node, v1.NodeInternalIP), nodeAddress(node, v1.NodeExternalIP),
		unknown(info.OSImage), unknown(info.KernelVersion), unknown(info.ContainerRuntimeVersion),
	}
}
