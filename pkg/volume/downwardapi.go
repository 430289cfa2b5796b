package volume

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/util/fieldpath"
	kresource "k8s.io/kubectl/pkg/util/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

const downwardAPIPluginName = "kubernetes.io/downward-api"

// downwardAPIPlugin projects the pod's own fields as files, on disk.
type downwardAPIPlugin struct {
	allocatable v1.ResourceList
	data        dataVolume
}

func newDownwardAPIPlugin(host Host) *downwardAPIPlugin {
	return &downwardAPIPlugin{allocatable: host.Allocatable, data: dataVolume{mounter: host.Mounter}}
}

func (p *downwardAPIPlugin) Name() string { return downwardAPIPluginName }

func (p *downwardAPIPlugin) CanSupport(v *v1.Volume) bool { return v.DownwardAPI != nil }

// SetUp (re)writes the files; called on every sync, it propagates label
// and annotation changes.
func (p *downwardAPIPlugin) SetUp(_ context.Context, c SetUpContext) (string, error) {
	src := c.Volume.DownwardAPI
	in := downwardInputs{pod: c.Pod, podIPs: c.PodIPs, allocatable: p.allocatable}
	payload, err := downwardAPIPayload(src.Items, in, fileMode(src.DefaultMode))
	if err != nil {
		return "", err
	}
	if err := p.data.write(c, payload); err != nil {
		return "", err
	}
	return c.Dir, nil
}

func (p *downwardAPIPlugin) TearDown(dir string) error { return p.data.tearDown(dir) }

// downwardInputs is what downward API files are made of.
type downwardInputs struct {
	pod         *v1.Pod
	podIPs      []string
	allocatable v1.ResourceList
}

// downwardAPIPayload builds one file per item. Every failing item is
// reported (aggregated, as the kubelet does), not only the first.
func downwardAPIPayload(items []v1.DownwardAPIVolumeFile, in downwardInputs, defaultMode int32) (map[string]FileProjection, error) {
	var errs []error
	payload := make(map[string]FileProjection, len(items))
	for _, it := range items {
		fp := FileProjection{Mode: itemMode(it.Mode, defaultMode)}
		value, err := downwardValue(it, in)
		if err != nil {
			errs = append(errs, err)
		} else {
			fp.Data = []byte(value)
		}
		payload[filepath.Clean(it.Path)] = fp
	}
	return payload, utilerrors.NewAggregate(errs)
}

func downwardValue(it v1.DownwardAPIVolumeFile, in downwardInputs) (string, error) {
	switch {
	case it.FieldRef != nil:
		return podFieldValue(in, it.FieldRef.FieldPath)
	case it.ResourceFieldRef != nil:
		return containerResourceValue(in, it.ResourceFieldRef)
	}
	return "", nil
}

// podFieldValue reads a pod field. Volumes take metadata fields (labels
// and annotations as sorted key="value" lines); the spec and status
// fields env vars allow are accepted too, as API validation keeps them
// out of volumes anyway.
func podFieldValue(in downwardInputs, path string) (string, error) {
	pod := in.pod
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		return joinHostIPs(pod.Status.HostIPs), nil
	case "status.podIP":
		if len(in.podIPs) > 0 {
			return in.podIPs[0], nil
		}
		return pod.Status.PodIP, nil
	case "status.podIPs":
		if len(in.podIPs) > 0 {
			return strings.Join(in.podIPs, ","), nil
		}
		return joinPodIPs(pod.Status.PodIPs), nil
	}
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

func joinHostIPs(ips []v1.HostIP) string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.IP)
	}
	return strings.Join(out, ",")
}

func joinPodIPs(ips []v1.PodIP) string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.IP)
	}
	return strings.Join(out, ",")
}

// containerResourceValue reads a container's request or limit in units of
// the divisor (rounded up). An unset cpu, memory or ephemeral-storage
// limit reads as the pod-level limit, else the node's allocatable, as for
// the kubelet.
func containerResourceValue(in downwardInputs, ref *v1.ResourceFieldSelector) (string, error) {
	c := findPodContainer(in.pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", ref.ContainerName)
	}
	c = c.DeepCopy()
	mergeAllocatableLimits(c, podutil.LimitDefaults(in.pod, in.allocatable))
	return kresource.ExtractContainerResourceValue(ref, c)
}

func findPodContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// mergeAllocatableLimits fills missing or zero limits from allocatable;
// hugepages are left out: they are never overcommitted, so always set.
func mergeAllocatableLimits(c *v1.Container, allocatable v1.ResourceList) {
	if c.Resources.Limits == nil {
		c.Resources.Limits = v1.ResourceList{}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
			continue
		}
		if q, ok := allocatable[name]; ok {
			c.Resources.Limits[name] = q.DeepCopy()
		}
	}
}
