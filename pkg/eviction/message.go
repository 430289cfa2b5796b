package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the pod status reason, and the Warning event's, of an
// eviction and of an admission refused under pressure.
const Reason = "Evicted"

// The kubelet's message formats (pkg/kubelet/eviction/helpers.go).
const (
	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	nodeConditionMessageFmt             = "The node had condition: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podMessageFmt                       = "Pod %s was using %s, request is %s, has larger consumption of %v. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
)

// The eviction event's annotations.
const (
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
	OffendingPodKey             = "offending_pod"
	OffendingPodUsageKey        = "offending_pod_usage"
	StarvedResourceKey          = "starved_resource"
)

// evictionMessage is the kubelet's: the starved resource, the first met
// threshold of that resource with its observation, then every container
// (and, with pod-level resources, the pod) using more than it requested.
func evictionMessage(r v1.ResourceName, p *Pod, met []Threshold, obs Observations) (string, map[string]string) {
	ann := map[string]string{}
	msg := fmt.Sprintf(nodeLowMessageFmt, r)
	if q, avail, ok := thresholdMetInfo(r, met, obs); ok {
		msg += fmt.Sprintf(thresholdMetMessageFmt, &q, avail)
	}
	if p.Stats == nil {
		return msg, ann
	}
	if r == v1.ResourceMemory && p.PodLevelMemoryRequest != nil && p.Stats.MemoryWorkingSet != nil {
		use := bytesQ(p.Stats.MemoryWorkingSet)
		msg += fmt.Sprintf(podMessageFmt, p.Name, use.String(), p.PodLevelMemoryRequest.String(), r)
		ann[OffendingPodKey], ann[OffendingPodUsageKey] = p.Name, use.String()
	}
	var names, usages []string
	for _, cs := range p.Stats.Containers {
		c, ok := findContainer(p.Containers, cs.Name)
		if !ok {
			continue
		}
		req, use := c.request(r), containerUsage(cs, r)
		if use != nil && use.Cmp(req) > 0 {
			msg += fmt.Sprintf(containerMessageFmt, c.Name, use.String(), req.String(), r)
			names, usages = append(names, c.Name), append(usages, use.String())
		}
	}
	ann[OffendingContainersKey] = strings.Join(names, ",")
	ann[OffendingContainersUsageKey] = strings.Join(usages, ",")
	ann[StarvedResourceKey] = string(r)
	return msg, ann
}

func findContainer(cs []Container, name string) (Container, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return Container{}, false
}

func (c Container) request(r v1.ResourceName) resource.Quantity {
	switch r {
	case v1.ResourceMemory:
		return c.MemoryRequest
	case v1.ResourceEphemeralStorage:
		return c.EphemeralStorageRequest
	}
	return resource.Quantity{}
}

// containerUsage: the working set for memory, writable layer plus logs
// for ephemeral storage; nil when not measured (no line in the message).
func containerUsage(cs ContainerStats, r v1.ResourceName) *resource.Quantity {
	switch r {
	case v1.ResourceMemory:
		if cs.MemoryWorkingSet != nil {
			return resource.NewQuantity(int64(*cs.MemoryWorkingSet), resource.BinarySI)
		}
	case v1.ResourceEphemeralStorage:
		if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
			return resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
		}
	}
	return nil
}

func thresholdMetInfo(r v1.ResourceName, met []Threshold, obs Observations) (resource.Quantity, *resource.Quantity, bool) {
	for _, t := range met {
		if signalResource[t.Signal] != r {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			return t.Value.Of(o.Capacity), quantity(t.Signal, o.Available), true
		}
	}
	return resource.Quantity{}, nil, false
}

// conditionsMessage is the admission refusal's "The node had condition:
// [MemoryPressure]. ".
func conditionsMessage(cs []v1.NodeConditionType) string {
	return fmt.Sprintf(nodeConditionMessageFmt, cs)
}
