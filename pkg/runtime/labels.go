package runtime

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's label and annotation keys. crictl, log collectors and a
// restarted agent read pods back from these, so they must not change.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash             = "io.kubernetes.container.hash"
	AnnotationRestartCount              = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath    = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy  = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationContainerPorts            = "io.kubernetes.container.ports"
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationPodDeletionGracePeriod    = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationContainerPreStopHandler   = "io.kubernetes.container.preStopHandler"

	// AnnotationSandboxHash records the pod-level spec a sandbox was made
	// for, so that a changed manifest recreates the sandbox. Not upstream:
	// the kubelet gives a changed static pod a new UID instead.
	AnnotationSandboxHash = "nodeagent.io/sandbox-hash"
)

// SandboxLabels are the pod's labels plus the kubelet's identity labels.
func SandboxLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	return labels
}

// SandboxAnnotations are the pod's annotations, as the kubelet passes them.
func SandboxAnnotations(pod *v1.Pod) map[string]string {
	a := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		a[k] = v
	}
	return a
}

// ContainerLabels identify a container's pod and name.
func ContainerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

// ContainerAnnotations carry what the agent must recover after a restart:
// the spec hash (to detect changes), the restart count and termination
// settings.
func ContainerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            HashContainer(c),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationContainerPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	return a
}

// HashSandbox hashes what a sandbox is made from: the pod spec without
// its containers (but with their host ports) and without the fields that
// may change in a running pod.
func HashSandbox(pod *v1.Pod) string {
	spec := pod.Spec.DeepCopy()
	var ports [][]v1.ContainerPort
	for _, c := range spec.Containers {
		ports = append(ports, c.Ports)
	}
	spec.Containers, spec.InitContainers, spec.EphemeralContainers = nil, nil, nil
	spec.ActiveDeadlineSeconds, spec.TerminationGracePeriodSeconds, spec.Tolerations = nil, nil, nil
	b, _ := json.Marshal(struct {
		Spec  *v1.PodSpec
		Ports [][]v1.ContainerPort
	}{spec, ports})
	h := fnv.New32a()
	h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// HashContainer hashes the container spec so that a changed spec restarts
// only that container. Like the kubelet, fnv-32a over the JSON, in hex.
func HashContainer(c *v1.Container) string {
	// Resources and their resize policies change in place (pods/resize),
	// as upstream's container hash leaves them out.
	cc := *c
	cc.Resources, cc.ResizePolicy = v1.ResourceRequirements{}, nil
	return hashJSON(&cc)
}

// HashContainerWithResources is the hash agents before in-place resize
// recorded, over the whole container: a container they made is not
// restarted for the change of hash.
func HashContainerWithResources(c *v1.Container) string { return hashJSON(c) }

func hashJSON(c *v1.Container) string {
	b, _ := json.Marshal(c) // v1.Container always marshals
	h := fnv.New32a()
	h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// PodRef identifies the pod a sandbox or container belongs to.
type PodRef struct {
	UID       types.UID
	Name      string
	Namespace string
}

// PodRefFromLabels reads the kubelet labels back; ok is false for objects
// not created by a kubelet-compatible agent.
func PodRefFromLabels(labels map[string]string) (PodRef, bool) {
	uid := labels[LabelPodUID]
	if uid == "" {
		return PodRef{}, false
	}
	return PodRef{UID: types.UID(uid), Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}, true
}

func annotationInt64(a map[string]string, key string, def int64) int64 {
	n, err := strconv.ParseInt(a[key], 10, 64)
	if err != nil {
		return def
	}
	return n
}

func annotationInt(a map[string]string, key string) int {
	n, err := strconv.Atoi(a[key])
	if err != nil {
		return 0
	}
	return n
}

// PodLogsDir is the kubelet's per-pod log directory:
// <root>/<namespace>_<name>_<uid>.
func PodLogsDir(root, namespace, name string, uid types.UID) string {
	return fmt.Sprintf("%s/%s_%s_%s", root, namespace, name, uid)
}

// ContainerLogPath is the log path relative to the pod's log directory:
// <container>/<restartCount>.log.
func ContainerLogPath(container string, restartCount int) string {
	return fmt.Sprintf("%s/%d.log", container, restartCount)
}
