package endpointutil

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// ShouldPodBeInEndpoints reports whether pod is published at all: not
// finished (Succeeded or Failed), with an IP, and not being deleted unless
// includeTerminating.
func ShouldPodBeInEndpoints(pod *v1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// ShouldSetHostname reports whether the pod's address carries its
// hostname: the pod names svc as its subdomain (the DNS records of
// headless services need it).
func ShouldSetHostname(pod *v1.Pod, svc *v1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *v1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == v1.ConditionTrue
}

func readyCondition(pod *v1.Pod) *v1.PodCondition { return podutil.Condition(&pod.Status, v1.PodReady) }

// FindPort resolves a service port's targetPort on pod: a number is taken
// as is, a name is looked up among the container ports of the same
// protocol (sidecars, init containers that restart always, included).
func FindPort(pod *v1.Pod, sp *v1.ServicePort) (int32, error) {
	if sp.TargetPort.Type == intstr.Int {
		return sp.TargetPort.IntVal, nil
	}
	name := sp.TargetPort.StrVal
	containers := pod.Spec.Containers
	for _, c := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&c) {
			containers = append(containers[:len(containers):len(containers)], c)
		}
	}
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name == name && p.Protocol == sp.Protocol {
				return p.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
}
