package scheduler

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// Requests assumed for containers that set none, when scoring only (as
// upstream's schedutil.DefaultMilliCPURequest and DefaultMemoryRequest).
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 * 1024 * 1024
)

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(defaultMemoryRequest, resource.BinarySI),
}

// resources is a pod's or a node's amount of the resources the scheduler
// accounts. Scalar holds extended resources (e.g. nvidia.com/gpu).
type resources struct {
	MilliCPU, Memory, EphemeralStorage int64
	Scalar                             map[v1.ResourceName]int64
}

func (r *resources) add(o resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] += v
	}
}

func resourcesOf(list v1.ResourceList) resources {
	var r resources
	for name, q := range list {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			r.Memory = q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case v1.ResourcePods:
		default:
			if isScalarResource(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] = q.Value()
			}
		}
	}
	return r
}

// isScalarResource reports whether name is an extended or hugepages
// resource the scheduler must account (not cpu, memory, storage or pods).
func isScalarResource(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, v1.ResourceHugePagesPrefix) {
		return true
	}
	// Extended resources are domain-prefixed outside kubernetes.io.
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, "requests.")
}

// podRequests is what a pod asks of its node: the sum over containers, at
// least the largest init container (sidecars counted as upstream), plus
// the overhead. With nonZero, containers without cpu/memory requests count
// the defaults above, as upstream's scoring does.
func podRequests(pod *v1.Pod, nonZero bool) resources {
	opts := resourcehelper.PodResourcesOptions{}
	if nonZero {
		opts.NonMissingContainerRequests = nonZeroDefaults
	}
	return resourcesOf(resourcehelper.PodRequests(pod, opts))
}

// nodeInfo is one node with the pods bound (or assumed bound) to it.
type nodeInfo struct {
	Node        *v1.Node
	Pods        []*v1.Pod
	Allocatable resources
	AllowedPods int64
	Requested   resources // sum of the pods' requests
	NonZero     resources // the same with scoring defaults
	UsedPorts   []podspec.HostPort
}

func newNodeInfo(node *v1.Node, pods ...*v1.Pod) *nodeInfo {
	ni := &nodeInfo{Node: node, Allocatable: resourcesOf(node.Status.Allocatable)}
	if q, ok := node.Status.Allocatable[v1.ResourcePods]; ok {
		ni.AllowedPods = q.Value()
	}
	for _, p := range pods {
		ni.addPod(p)
	}
	return ni
}

func (ni *nodeInfo) addPod(p *v1.Pod) {
	ni.Pods = append(ni.Pods, p)
	ni.Requested.add(podRequests(p, false))
	ni.NonZero.add(podRequests(p, true))
	ni.UsedPorts = append(ni.UsedPorts, podspec.HostPorts(p)...)
}

// buildSnapshot groups pods by node; pods on unknown nodes are dropped.
// The result is sorted by node name.
func buildSnapshot(nodes []*v1.Node, pods []*v1.Pod) []*nodeInfo {
	byName := make(map[string]*nodeInfo, len(nodes))
	out := make([]*nodeInfo, 0, len(nodes))
	for _, n := range nodes {
		ni := newNodeInfo(n)
		byName[n.Name] = ni
		out = append(out, ni)
	}
	for _, p := range pods {
		if ni := byName[p.Spec.NodeName]; ni != nil {
			ni.addPod(p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out
}
