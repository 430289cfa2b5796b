package criconfig

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// ContainerInputs is what a container's CRI config depends on beyond its
// spec and the node: the sandbox, and what the agent prepared for this
// start of the container.
type ContainerInputs struct {
	PodIPs          []string
	ImageRef        string
	RestartCount    int
	TermMessagePath string // host file mounted at terminationMessagePath
	EtcHostsPath    string // host file mounted at /etc/hosts, "" for none
	PidTarget       string // container whose PID namespace to join (ephemeral containers)
	EnvObjects      EnvObjects
	Volumes         map[string]volume.Mounted // the pod's volumes, by name

	// Services are the cluster's services when the container starts, for
	// its service environment variables (nil: none, as standalone).
	Services []*v1.Service

	// UserNamespace is the sandbox's (nil: the pod's default), which its
	// containers share, as the kubelet gives them the same namespace
	// options.
	UserNamespace *criv1.UserNamespace
}

// ContainerConfig is the container's CreateContainer request, with the
// kubelet's labels and annotations (crictl shows them, and the planner and
// status read them back). A *ConfigError is the user's to fix.
func ContainerConfig(pod *v1.Pod, c *v1.Container, node Node, in ContainerInputs) (*criv1.ContainerConfig, error) {
	if err := blockVolumes(c); err != nil {
		return nil, err
	}
	envs, err := makeEnv(pod, c, node, in)
	if err != nil {
		return nil, err
	}
	lookup := envLookup(envs)
	cmd := make([]string, len(c.Command))
	for i, s := range c.Command {
		cmd[i] = expand(s, lookup)
	}
	args := make([]string, len(c.Args))
	for i, s := range c.Args {
		args[i] = expand(s, lookup)
	}
	mounts, err := containerMounts(pod, c, in, envs)
	if err != nil {
		return nil, err
	}
	cfg := &criv1.ContainerConfig{
		Metadata:    &criv1.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:       &criv1.ImageSpec{Image: in.ImageRef, UserSpecifiedImage: c.Image},
		Command:     cmd,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Labels:      runtime.ContainerLabels(pod, c),
		Annotations: runtime.ContainerAnnotations(pod, c, in.RestartCount),
		LogPath:     runtime.ContainerLogPath(c.Name, in.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      mounts,
		Linux: &criv1.LinuxContainerConfig{
			Resources:       containerResources(pod, c, node.Allocatable.Memory().Value()),
			SecurityContext: containerSecurity(pod, c),
		},
	}
	if err := setSecurityProfiles(cfg.Linux.SecurityContext, pod, c, node); err != nil {
		return nil, err
	}
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	if in.PidTarget != "" {
		ns.Pid, ns.TargetId = criv1.NamespaceMode_TARGET, in.PidTarget
	}
	if in.UserNamespace != nil {
		ns.UsernsOptions = in.UserNamespace
	}
	return cfg, nil
}

func containerMounts(pod *v1.Pod, c *v1.Container, in ContainerInputs, envs []*criv1.KeyValue) ([]*criv1.Mount, error) {
	env := make(map[string]string, len(envs))
	for _, e := range envs {
		env[e.Key] = string(e.Value)
	}
	mounts, err := volumeMounts(pod, c, in.Volumes, env)
	if err != nil {
		return nil, err
	}
	if in.EtcHostsPath != "" && !mountsPath(c, "/etc/hosts") {
		// Relabelled, as the kubelet's managed hosts file is.
		mounts = append(mounts, &criv1.Mount{ContainerPath: "/etc/hosts", HostPath: in.EtcHostsPath, SelinuxRelabel: true})
	}
	if in.TermMessagePath != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &criv1.Mount{ContainerPath: c.TerminationMessagePath, HostPath: in.TermMessagePath})
	}
	return mounts, nil
}

func mountsPath(c *v1.Container, p string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == p {
			return true
		}
	}
	return false
}

func envLookup(envs []*criv1.KeyValue) func(string) (string, bool) {
	m := make(map[string]string, len(envs))
	for _, e := range envs {
		m[e.Key] = string(e.Value)
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// makeEnv resolves the container's env in order; each value may refer to
// variables defined before it and to the service variables, which come
// last, those the container defines itself left out.
func makeEnv(pod *v1.Pod, c *v1.Container, node Node, in ContainerInputs) ([]*criv1.KeyValue, error) {
	defined := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := defined[k]; !ok {
			order = append(order, k)
		}
		defined[k] = v
	}
	services := ServiceEnv(pod.Namespace, serviceLinks(pod), in.Services)
	lookup := func(k string) (string, bool) { return lookupEnv(defined, services, k) }
	if _, err := envFromSources(c, pod.Namespace, in.EnvObjects, set); err != nil {
		return nil, err
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, ok, err := envValueFrom(pod, c, e.ValueFrom, node, in)
		if err != nil {
			return nil, err
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]*criv1.KeyValue, 0, len(order)+len(services))
	for _, k := range order {
		out = append(out, &criv1.KeyValue{Key: k, Value: []byte(defined[k])})
	}
	return appendServiceEnv(out, services, defined), nil
}

func envValueFrom(pod *v1.Pod, c *v1.Container, src *v1.EnvVarSource, node Node, in ContainerInputs) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := podFieldValue(pod, src.FieldRef.FieldPath, node, in)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, c, src.ResourceFieldRef, podutil.LimitDefaults(pod, node.Allocatable))
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil, src.SecretKeyRef != nil:
		return keyRefValue(src, pod.Namespace, in.EnvObjects)
	}
	return "", false, nil
}

func podFieldValue(pod *v1.Pod, path string, node Node, in ContainerInputs) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return node.Name, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return node.IP, nil
	case "status.podIP":
		if ips := PodIPs(pod, node.IP, in.PodIPs); len(ips) > 0 {
			return ips[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(PodIPs(pod, node.IP, in.PodIPs), ","), nil
	}
	return "", &ConfigError{fmt.Sprintf("unsupported fieldPath: %s", path)}
}

// subscript parses metadata.labels['key'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

func resourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, alloc v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = podutil.FindContainer(pod, ref.ContainerName)
		if target == nil {
			return "", &ConfigError{fmt.Sprintf("resourceFieldRef: no container %q", ref.ContainerName)}
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", &ConfigError{fmt.Sprintf("unsupported container resource: %v", ref.Resource)}
	}
	list := target.Resources.Limits
	if kind == "requests" {
		list = target.Resources.Requests
	}
	q, found := list[v1.ResourceName(name)]
	if !found && kind == "limits" {
		q, found = alloc[v1.ResourceName(name)] // the pod-level limit, else node allocatable
	}
	if !found {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == "cpu" {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// blockVolumes refuses volumeDevices as the kubelet's makeBlockVolumes
// does for a volume without a block volume mapper: the agent maps no
// block volumes (no plugin it has supports volumeMode Block), so such a
// container fails with CreateContainerConfigError instead of running
// without its device.
func blockVolumes(c *v1.Container) error {
	if len(c.VolumeDevices) == 0 {
		return nil
	}
	d := c.VolumeDevices[0] // the first one fails, as in the kubelet's loop
	if !filepath.IsAbs(d.DevicePath) {
		return &ConfigError{fmt.Sprintf("error DevicePath `%s` must be an absolute path", d.DevicePath)}
	}
	return &ConfigError{fmt.Sprintf("cannot find volume %q to pass into container %q", d.Name, c.Name)}
}
