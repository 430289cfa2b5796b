package podspec

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultImagePullPolicy(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"nginx":                                  v1.PullAlways,
		"nginx:latest":                           v1.PullAlways,
		"docker.io/library/nginx":                v1.PullAlways,
		"localhost:5000/nginx":                   v1.PullAlways, // ':' is the registry port
		"localhost:5000/nginx:latest":            v1.PullAlways,
		"nginx:latest@sha256:" + sha:             v1.PullAlways, // upstream looks at the tag only
		"nginx:1.27":                             v1.PullIfNotPresent,
		"localhost:5000/nginx:1.27":              v1.PullIfNotPresent,
		"nginx@sha256:" + sha:                    v1.PullIfNotPresent,
		"registry.example.com/a/b@sha256:" + sha: v1.PullIfNotPresent,
		"nginx:LATEST":                           v1.PullIfNotPresent,
		"":                                       v1.PullIfNotPresent,
	} {
		if got := DefaultImagePullPolicy(image); got != want {
			t.Errorf("DefaultImagePullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

const sha = "0000000000000000000000000000000000000000000000000000000000000000"

// TestSetDefaults lists, for a bare pod, every field SetDefaults must fill.
func TestSetDefaults(t *testing.T) {
	mode := int32(0400)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "none"},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
				{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: &mode}}},
				{Name: "dapi", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
					Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
				{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:v1"}}},
			},
			InitContainers: []v1.Container{{Name: "init", Image: "busybox",
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}},
			Containers: []v1.Container{{
				Name:  "app",
				Image: "nginx:1.27",
				Ports: []v1.ContainerPort{{ContainerPort: 80}},
				Env:   []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("0.0001")},
				},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
				StartupProbe:  &v1.Probe{PeriodSeconds: 5, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
				Lifecycle:     &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
			}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox:latest"}}},
		},
	}
	SetDefaults(pod)

	grace, links := int64(30), true
	hostPathUnset, mode644, hour := v1.HostPathUnset, int32(0644), int64(3600)
	probe := func(p v1.Probe) *v1.Probe {
		p.TimeoutSeconds, p.SuccessThreshold, p.FailureThreshold = 1, 1, 3
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		return &p
	}
	want := v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "none", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv", Type: &hostPathUnset}}},
			{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: &mode644}}},
			{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: &mode}}}, // kept
			{Name: "dapi", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: &mode644,
				Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}}},
			{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: &mode644, Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &hour}}}}}},
			{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullIfNotPresent}}},
		},
		InitContainers: []v1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: v1.PullAlways,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
			Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			}}},
		Containers: []v1.Container{{
			Name:                     "app",
			Image:                    "nginx:1.27",
			ImagePullPolicy:          v1.PullIfNotPresent,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			Ports:                    []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}},
			Env:                      []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
				// Existing requests are kept (rounded up to milli units); missing ones copy the limit.
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m"), v1.ResourceMemory: resource.MustParse("1Gi")},
			},
			LivenessProbe: probe(v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP}}}),
			StartupProbe: probe(v1.Probe{PeriodSeconds: 5, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}),
			Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTP}}},
		}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox:latest", ImagePullPolicy: v1.PullAlways,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile}}},
		RestartPolicy:                 v1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: &grace,
		DNSPolicy:                     v1.DNSClusterFirst,
		SecurityContext:               &v1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
		EnableServiceLinks:            &links,
	}
	if !equality.Semantic.DeepEqual(pod.Spec, want) {
		t.Errorf("SetDefaults: unexpected spec (-want +got):\n%s", diff.Diff(want, pod.Spec))
	}
	if pod.Namespace != "" || pod.Spec.Priority != nil {
		t.Errorf("namespace and priority must be left alone, got %q and %v", pod.Namespace, pod.Spec.Priority)
	}

	// Defaulting twice changes nothing.
	again := pod.DeepCopy()
	SetDefaults(again)
	if !equality.Semantic.DeepEqual(again, pod) {
		t.Errorf("SetDefaults is not idempotent:\n%s", diff.Diff(pod, again))
	}
}

func TestSetDefaultsKeepsSetFields(t *testing.T) {
	grace, links := int64(5), false
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy:                 v1.RestartPolicyNever,
		DNSPolicy:                     v1.DNSDefault,
		TerminationGracePeriodSeconds: &grace,
		SchedulerName:                 "other",
		EnableServiceLinks:            &links,
		Containers: []v1.Container{{Name: "app", Image: "nginx", ImagePullPolicy: v1.PullNever,
			TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
			Ports:          []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
			ReadinessProbe: &v1.Probe{TimeoutSeconds: 2, PeriodSeconds: 3, SuccessThreshold: 4, FailureThreshold: 5},
		}},
	}}
	want := pod.DeepCopy()
	SetDefaults(pod)
	want.Spec.SecurityContext = &v1.PodSecurityContext{}
	if !equality.Semantic.DeepEqual(pod, want) {
		t.Errorf("SetDefaults overwrote set fields:\n%s", diff.Diff(want, pod))
	}
}

func TestSetDefaultsHostNetwork(t *testing.T) {
	tests := []struct {
		name     string
		hostNet  bool
		port     v1.ContainerPort
		wantHost int32
	}{
		{"host network copies the container port", true, v1.ContainerPort{ContainerPort: 8080}, 8080},
		{"host network keeps an explicit host port", true, v1.ContainerPort{ContainerPort: 8080, HostPort: 9090}, 9090},
		{"pod network leaves host port unset", false, v1.ContainerPort{ContainerPort: 8080}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNet,
				InitContainers: []v1.Container{{Name: "i", Image: "x", Ports: []v1.ContainerPort{tc.port}}},
				Containers:     []v1.Container{{Name: "c", Image: "x", Ports: []v1.ContainerPort{tc.port}}}}}
			SetDefaults(pod)
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if got := c.Ports[0].HostPort; got != tc.wantHost {
					t.Errorf("container %s: hostPort = %d, want %d", c.Name, got, tc.wantHost)
				}
			}
		})
	}
}

func TestSetDefaultsEphemeralVolume(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{
		Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}}}}}
	SetDefaults(pod)
	if m := pod.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.VolumeMode; m == nil || *m != v1.PersistentVolumeFilesystem {
		t.Errorf("volumeMode = %v, want Filesystem", m)
	}
}

// Pod-level requests default as upstream's KEP-2837 rules: from what the
// containers request, else from the pod-level limit; huge pages limits
// from the containers'.
func TestSetDefaultsPodLevelResources(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name       string
		pod        v1.ResourceRequirements
		containers []v1.ResourceRequirements
		want       v1.ResourceRequirements
	}{{
		name:       "limits only: requests are the limits",
		pod:        v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("1"), "memory": q("128Mi")}},
		containers: []v1.ResourceRequirements{{}},
		want: v1.ResourceRequirements{
			Limits:   v1.ResourceList{"cpu": q("1"), "memory": q("128Mi")},
			Requests: v1.ResourceList{"cpu": q("1"), "memory": q("128Mi")},
		},
	}, {
		name: "containers request cpu: the pod requests their sum",
		pod:  v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("1"), "memory": q("128Mi")}},
		containers: []v1.ResourceRequirements{
			{Requests: v1.ResourceList{"cpu": q("100m")}},
			{Requests: v1.ResourceList{"cpu": q("200m")}},
		},
		want: v1.ResourceRequirements{
			Limits:   v1.ResourceList{"cpu": q("1"), "memory": q("128Mi")},
			Requests: v1.ResourceList{"cpu": q("300m"), "memory": q("128Mi")},
		},
	}, {
		name:       "requests only: left alone",
		pod:        v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": q("1")}},
		containers: []v1.ResourceRequirements{{}},
		want:       v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": q("1")}},
	}, {
		name: "container huge pages: the pod's limit and request",
		pod:  v1.ResourceRequirements{Limits: v1.ResourceList{"memory": q("1Gi")}},
		containers: []v1.ResourceRequirements{
			{Limits: v1.ResourceList{"hugepages-2Mi": q("4Mi")}},
		},
		want: v1.ResourceRequirements{
			Limits:   v1.ResourceList{"memory": q("1Gi"), "hugepages-2Mi": q("4Mi")},
			Requests: v1.ResourceList{"memory": q("1Gi"), "hugepages-2Mi": q("4Mi")},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Resources: tc.pod.DeepCopy()}}
			for i, r := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprint("c", i), Image: "i", Resources: *r.DeepCopy()})
			}
			SetDefaults(pod)
			if !equality.Semantic.DeepEqual(*pod.Spec.Resources, tc.want) {
				t.Errorf("pod resources %v, want %v", *pod.Spec.Resources, tc.want)
			}
		})
	}
}
