package podutil

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubectl/pkg/util/qos"
)

// ComputeQOS classifies a pod as the API server does when it sets
// status.qosClass on create: upstream's ComputePodQOS (k8s.io/kubectl's
// copy of pkg/apis/core/v1/helper/qos), where pod-level resources, when
// set, decide instead of the containers.
func ComputeQOS(pod *v1.Pod) v1.PodQOSClass { return qos.ComputePodQOS(pod) }

// QOSClass is the class the kubelet acts on (GetPodQOS): the API's
// status.qosClass when the pod carries one, else computed (static pods).
func QOSClass(pod *v1.Pod) v1.PodQOSClass { return qos.GetPodQOS(pod) }
