package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// SetDefaults fills in the fields the Kubernetes API server defaults when a
// pod is created. It is idempotent: fields that are already set are kept.
// metadata.namespace and spec.priority are deliberately left alone.
func SetDefaults(pod *v1.Pod) {
	spec := &pod.Spec
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr(int64(v1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr(v1.DefaultEnableServiceLinks)
	}

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			c := &list[i]
			defaultContainer(c)
			// Only on pods (not templates): requests default to limits.
			defaultRequestsToLimits(&c.Resources)
			// With host networking every container port is also a host port.
			if spec.HostNetwork {
				for j := range c.Ports {
					if c.Ports[j].HostPort == 0 {
						c.Ports[j].HostPort = c.Ports[j].ContainerPort
					}
				}
			}
		}
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	// After the containers' defaults, as upstream (PodLevelResources is on
	// by default in v1.37).
	defaultHugePagePodLimits(pod)
	defaultPodRequests(pod)
}

// defaultHugePagePodLimits gives pod-level resources that name something
// a pod-level huge pages limit: the containers' total, unless the pod
// requests that size itself.
func defaultHugePagePodLimits(pod *v1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 && len(r.Requests) == 0 {
		return
	}
	limits := r.Limits
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{}) {
		if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		_, requested := r.Requests[name]
		if _, set := limits[name]; !set && !requested {
			limits[name] = q.DeepCopy()
		}
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
}

// defaultPodRequests fills the pod-level requests of a pod with pod-level
// limits: cpu and memory from what the containers request in all, and
// whatever is still missing from the pod-level limit (KEP-2837's
// defaulting rules). Without it a pod that sets only pod-level limits
// would be Burstable where upstream makes it Guaranteed.
func defaultPodRequests(pod *v1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	requests := r.Requests
	if requests == nil {
		requests = v1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		// Only what may be overcommitted (cpu, memory), not huge pages.
		overcommit := name == v1.ResourceCPU || name == v1.ResourceMemory
		if _, set := requests[name]; !set && overcommit {
			requests[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, set := requests[name]; !set && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
}

// DefaultImagePullPolicy is the pull policy the API server gives a container
// that sets none: Always for the tag "latest" (explicit, or implied by an image
// with neither tag nor digest), IfNotPresent otherwise.
func DefaultImagePullPolicy(image string) v1.PullPolicy {
	if imageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of an image reference, "latest" when the reference
// has neither tag nor digest, and "" for an empty reference.
func imageTag(image string) string {
	if image == "" {
		return ""
	}
	name, digest, _ := strings.Cut(image, "@")
	// A ':' before the last '/' is a registry port, not a tag.
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if digest != "" {
		return ""
	}
	return "latest"
}

func defaultContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultImagePullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			defaultFieldRef(vf.FieldRef)
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

func defaultFieldRef(f *v1.ObjectFieldSelector) {
	if f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// defaultRequestsToLimits copies each limit that has no matching request.
func defaultRequestsToLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// roundUpToMilli rounds quantities up to milli precision, as the API does.
func roundUpToMilli(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

func defaultVolume(vol *v1.Volume) {
	src := &vol.VolumeSource
	if len(setVolumeSources(src)) == 0 {
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	switch {
	case src.HostPath != nil && src.HostPath.Type == nil:
		src.HostPath.Type = ptr(v1.HostPathUnset)
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = ptr(v1.SecretVolumeSourceDefaultMode)
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = ptr(v1.ConfigMapVolumeSourceDefaultMode)
	case src.Image != nil && src.Image.PullPolicy == "":
		src.Image.PullPolicy = DefaultImagePullPolicy(src.Image.Reference)
	case src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil:
		if spec := &src.Ephemeral.VolumeClaimTemplate.Spec; spec.VolumeMode == nil {
			spec.VolumeMode = ptr(v1.PersistentVolumeFilesystem)
		}
	}
	if d := src.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			d.DefaultMode = ptr(v1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(d.Items)
	}
	if p := src.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr(v1.ProjectedVolumeSourceDefaultMode)
		}
		for _, s := range p.Sources {
			if s.DownwardAPI != nil {
				defaultDownwardAPIFiles(s.DownwardAPI.Items)
			}
			if t := s.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr(int64(3600))
			}
		}
	}
}

func defaultDownwardAPIFiles(items []v1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			defaultFieldRef(items[i].FieldRef)
		}
	}
}

func ptr[T any](v T) *T { return &v }
