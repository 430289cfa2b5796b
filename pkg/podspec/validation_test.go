package podspec

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// basePod is a small valid, defaulted pod that the failing cases break.
func basePod() *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "data"}},
			Containers: []v1.Container{{
				Name:         "app",
				Image:        "nginx:1.27",
				Ports:        []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
		},
	}
	SetDefaults(pod)
	return pod
}

// fullPod sets (nearly) every field this package validates, all validly.
func fullPod() *v1.Pod {
	i64 := func(v int64) *int64 { return &v }
	mode := int32(0440)
	bidirectional, hostToContainer := v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer
	rroEnabled, always := v1.RecursiveReadOnlyEnabled, v1.ContainerRestartPolicyAlways
	dirType, defaultProc, onRootMismatch := v1.HostPathDirectoryOrCreate, v1.DefaultProcMount, v1.FSGroupChangeOnRootMismatch
	strict, recursive, never := v1.SupplementalGroupsPolicyStrict, v1.SELinuxChangePolicyRecursive, v1.PreemptNever
	runtimeClass, localhostProfile, t, f := "gvisor", "profiles/audit.json", true, false
	q := resource.MustParse
	field := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
	}
	httpProbe := v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}}, InitialDelaySeconds: 3}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0.example", Namespace: "prod",
			Labels:      map[string]string{"app": "web", "example.com/tier": "front_end-1"},
			Annotations: map[string]string{v1.MirrorPodAnnotationKey: "hash", "example.com/note": "any text at all"},
		},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(q("64Mi"))}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log", Type: &dirType}}},
				{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "tls", DefaultMode: &mode,
					Items: []v1.KeyToPath{{Key: "tls.crt", Path: "certs/tls.crt", Mode: &mode}}}}},
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}, Items: []v1.KeyToPath{{Key: "a", Path: "a.conf"}}}}},
				{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['example.com/tier']"}},
					{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: q("1m")}},
				}}}},
				{Name: "projected", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Items: []v1.KeyToPath{{Key: "k", Path: "s/k"}}}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Items: []v1.KeyToPath{{Key: "k", Path: "c/k"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", Path: "token", ExpirationSeconds: i64(7200)}},
				}}}},
				{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "web-data"}}},
				{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports"}}},
				{Name: "csi", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}},
				{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:v1"}}},
				{Name: "legacy", VolumeSource: v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{Repository: "https://example.com/r.git"}}},
			},
			InitContainers: []v1.Container{
				{Name: "migrate", Image: "migrate:v3", Command: []string{"migrate", "up"}},
				{Name: "proxy", Image: "envoy:v1", RestartPolicy: &always, Ports: []v1.ContainerPort{{ContainerPort: 9901}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(9901)}}},
					StartupProbe:   &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9901}}}},
			},
			Containers: []v1.Container{{
				Name: "app", Image: "registry.example.com:5000/team/web@sha256:" + sha, WorkingDir: "/srv",
				Ports: []v1.ContainerPort{
					{Name: "http", ContainerPort: 8080, HostPort: 80},
					{Name: "metrics", ContainerPort: 9090, Protocol: v1.ProtocolTCP},
					{ContainerPort: 5353, HostPort: 5353, HostIP: "127.0.0.1", Protocol: v1.ProtocolUDP},
					{ContainerPort: 5353, HostPort: 5353, HostIP: "127.0.0.1", Protocol: v1.ProtocolTCP},
					{ContainerPort: 3868, Protocol: v1.ProtocolSCTP},
				},
				EnvFrom: []v1.EnvFromSource{
					{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}}},
					{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "web-secret"}}},
				},
				Env: []v1.EnvVar{
					{Name: "PLAIN", Value: "x"},
					{Name: "1st.relaxed-name:ok", Value: "relaxed"},
					{Name: "NAME", ValueFrom: field("metadata.name")},
					{Name: "NS", ValueFrom: field("metadata.namespace")},
					{Name: "UID", ValueFrom: field("metadata.uid")},
					{Name: "NODE", ValueFrom: field("spec.nodeName")},
					{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
					{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
					{Name: "HOST_IPS", ValueFrom: field("status.hostIPs")},
					{Name: "POD_IP", ValueFrom: field("status.podIP")},
					{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
					{Name: "TIER", ValueFrom: field("metadata.labels['example.com/tier']")},
					{Name: "NOTE", ValueFrom: field("metadata.annotations['example.com/note']")},
					{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: q("1Mi")}}},
					{Name: "CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}, Key: "mode"}}},
					{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "web-secret"}, Key: "pass.word"}}},
				},
				Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{"cpu": q("2"), "memory": q("1Gi"), "hugepages-2Mi": q("64Mi"),
						"example.com/gpu": q("1"), "ephemeral-storage": q("10Gi")},
					Requests: v1.ResourceList{"cpu": q("500m"), "memory": q("512Mi"), "hugepages-2Mi": q("64Mi"), "example.com/gpu": q("1")},
				},
				VolumeMounts: []v1.VolumeMount{
					{Name: "scratch", MountPath: "/tmp"},
					{Name: "host", MountPath: "/host/log", ReadOnly: true, MountPropagation: &hostToContainer},
					{Name: "host", MountPath: "/host/bidi", MountPropagation: &bidirectional},
					{Name: "secret", MountPath: "/etc/tls", ReadOnly: true, RecursiveReadOnly: &rroEnabled},
					{Name: "config", MountPath: "/etc/web/a.conf", SubPath: "a.conf"},
					{Name: "claim", MountPath: "/var/lib/web", SubPathExpr: "$(NAME)"},
					{Name: "podinfo", MountPath: "/etc/podinfo"},
					{Name: "projected", MountPath: "/var/run/projected"},
					{Name: "nfs", MountPath: "/mnt/nfs"},
					{Name: "csi", MountPath: "/mnt/secrets"},
					{Name: "tools", MountPath: "/tools"},
					{Name: "tools", MountPath: "/bin/tool", SubPath: "bin/tool"}, // allowed since 1.33
					{Name: "legacy", MountPath: "/legacy"},
				},
				LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"healthz"}}}, TerminationGracePeriodSeconds: i64(5)},
				ReadinessProbe: &httpProbe,
				StartupProbe:   &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, FailureThreshold: 30},
				Lifecycle: &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"warm-up"}}},
					PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}},
				},
				TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &v1.SecurityContext{
					Privileged: &t, RunAsUser: i64(1000), RunAsGroup: i64(1000), RunAsNonRoot: &t, ProcMount: &defaultProc,
					Capabilities:    &v1.Capabilities{Add: []v1.Capability{"NET_BIND_SERVICE"}, Drop: []v1.Capability{"ALL"}},
					SeccompProfile:  &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &localhostProfile},
					AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault},
				},
			}, {
				Name: "sidekick", Image: "busybox", Ports: []v1.ContainerPort{{ContainerPort: 8081, HostPort: 8081}},
				SecurityContext: &v1.SecurityContext{AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t},
			}},
			RestartPolicy:         v1.RestartPolicyOnFailure,
			ActiveDeadlineSeconds: i64(3600),
			DNSPolicy:             v1.DNSNone,
			DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"10.0.0.10", "fd00::10"}, Searches: []string{"svc.cluster.local.", "_tcp.example.com", "."},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}}},
			NodeSelector:          map[string]string{"kubernetes.io/os": "linux", "disk": ""},
			ServiceAccountName:    "web-sa",
			NodeName:              "node-1.example.com",
			ShareProcessNamespace: &t,
			SecurityContext: &v1.PodSecurityContext{
				RunAsUser: i64(0), RunAsGroup: i64(0), FSGroup: i64(2000), SupplementalGroups: []int64{3000, 0},
				SupplementalGroupsPolicy: &strict, FSGroupChangePolicy: &onRootMismatch, SELinuxChangePolicy: &recursive,
				Sysctls:        []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}, {Name: "kernel/shm_rmid_forced", Value: "1"}},
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
			},
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "registry"}},
			Hostname:         "web-0",
			Subdomain:        "web",
			Tolerations: []v1.Toleration{
				{Operator: v1.TolerationOpExists},
				{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "web", Effect: v1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: i64(30)},
				{Key: "zone", Value: "a", Effect: v1.TaintEffectPreferNoSchedule},
			},
			HostAliases:       []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.local", "cache"}}},
			PriorityClassName: "high-priority",
			Priority:          ptr(int32(1000)),
			ReadinessGates:    []v1.PodReadinessGate{{ConditionType: "example.com/ready"}},
			RuntimeClassName:  &runtimeClass,
			PreemptionPolicy:  &never,
			OS:                &v1.PodOS{Name: v1.Linux},
		},
	}
	SetDefaults(pod)
	return pod
}

func TestValidateAcceptsValidPods(t *testing.T) {
	hostNet := basePod()
	hostNet.Spec.HostNetwork = true
	hostNet.Spec.Containers[0].Ports[0].HostPort = 0
	SetDefaults(hostNet) // hostPort becomes 8080
	for name, pod := range map[string]*v1.Pod{"base": basePod(), "full": fullPod(), "hostNetwork": hostNet} {
		if errs := Validate(pod); len(errs) != 0 {
			t.Errorf("%s pod: unexpected errors:\n%s", name, strings.Join(errStrings(errs), "\n"))
		}
	}
}

// errStrings renders errors as "<type>: <field>", e.g.
// "Required value: spec.containers[0].image".
func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s", e.Type, e.Field))
	}
	slices.Sort(out)
	return out
}

// errDetails renders errors as "<type>: <field>: <detail>", sorted, for
// tests that check upstream's messages too.
func errDetails(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Type.String()+": "+e.Field+": "+e.Detail)
	}
	slices.Sort(out)
	return out
}

// Shorthands for the expected errors.
func required(path string) string     { return "Required value: " + path }
func invalid(path string) string      { return "Invalid value: " + path }
func unsupported(path string) string  { return "Unsupported value: " + path }
func forbidden(path string) string    { return "Forbidden: " + path }
func duplicate(path string) string    { return "Duplicate value: " + path }
func notFound(path string) string     { return "Not found: " + path }
func c0(path string) string           { return "spec.containers[0]." + path }
func expectErrs(s ...string) []string { return s }

type validationCase struct {
	name   string
	mutate func(p *v1.Pod)
	want   []string // exact set of "<type>: <field>"
}

func runValidationCases(t *testing.T, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			got, want := errStrings(Validate(pod)), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q\n%s", got, want, FormatErrors(Validate(pod)))
			}
		})
	}
}

func TestValidateMetadata(t *testing.T) {
	runValidationCases(t, []validationCase{
		{"name missing", func(p *v1.Pod) { p.Name = "" }, expectErrs(required("metadata.name"))},
		{"name not a DNS subdomain", func(p *v1.Pod) { p.Name = "Web_1" }, expectErrs(invalid("metadata.name"))},
		{"namespace missing", func(p *v1.Pod) { p.Namespace = "" }, expectErrs(required("metadata.namespace"))},
		{"namespace not a DNS label", func(p *v1.Pod) { p.Namespace = "a.b" }, expectErrs(invalid("metadata.namespace"))},
		{"label key", func(p *v1.Pod) { p.Labels = map[string]string{"bad key": "v"} }, expectErrs(invalid("metadata.labels"))},
		{"label value", func(p *v1.Pod) { p.Labels = map[string]string{"k": "bad value"} }, expectErrs(invalid("metadata.labels"))},
		{"annotation key", func(p *v1.Pod) { p.Annotations = map[string]string{"-bad": ""} }, expectErrs(invalid("metadata.annotations"))},
		{"mirror annotation needs nodeName", func(p *v1.Pod) { p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"} },
			expectErrs(invalid("metadata.annotations[kubernetes.io/config.mirror]"))},
	})
}

func TestValidateContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	runValidationCases(t, []validationCase{
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, expectErrs(required("spec.containers"))},
		{"name missing", func(p *v1.Pod) { p.Spec.Containers[0].Name = "" }, expectErrs(required(c0("name")))},
		{"name not a DNS label", func(p *v1.Pod) { p.Spec.Containers[0].Name = "App_1" }, expectErrs(invalid(c0("name")))},
		{"duplicate app container", func(p *v1.Pod) {
			c := p.Spec.Containers[0]
			c.Ports = nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, expectErrs(duplicate("spec.containers[1].name"))},
		{"init container named like an app container", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "app", Image: "x", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile}}
		}, expectErrs(duplicate("spec.initContainers[0].name"))},
		{"image missing", func(p *v1.Pod) { p.Spec.Containers[0].Image = "" }, expectErrs(required(c0("image")))},
		{"image padded", func(p *v1.Pod) { p.Spec.Containers[0].Image = " nginx " }, expectErrs(invalid(c0("image")))},
		{"image blank", func(p *v1.Pod) { p.Spec.Containers[0].Image = "  " }, expectErrs(invalid(c0("image")))},
		{"imagePullPolicy unknown", func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, expectErrs(unsupported(c0("imagePullPolicy")))},
		{"imagePullPolicy empty", func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "" }, expectErrs(required(c0("imagePullPolicy")))},
		{"terminationMessagePolicy unknown", func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Stdout" },
			expectErrs(unsupported(c0("terminationMessagePolicy")))},
		{"pod restartPolicy unknown", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, expectErrs(unsupported("spec.restartPolicy"))},
		{"pod restartPolicy empty", func(p *v1.Pod) { p.Spec.RestartPolicy = "" }, expectErrs(required("spec.restartPolicy"))},
		{"probe on a plain init container", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x",
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}}
			SetDefaults(p)
		}, expectErrs(forbidden("spec.initContainers[0].livenessProbe"))},
		{"bad probe on a sidecar is validated", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x", RestartPolicy: &always,
				ReadinessProbe: &v1.Probe{}}}
			SetDefaults(p)
		}, expectErrs(required("spec.initContainers[0].readinessProbe"))},
		{"ephemeral containers on create", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "app",
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			SetDefaults(p)
		}, expectErrs(forbidden("spec.ephemeralContainers"))},
		{"ephemeral container rules", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "nope",
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "app", Image: "busybox",
					Ports: []v1.ContainerPort{{ContainerPort: 1}}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}}}}
			SetDefaults(p)
		}, expectErrs(forbidden("spec.ephemeralContainers"), duplicate("spec.ephemeralContainers[0].name"),
			notFound("spec.ephemeralContainers[0].targetContainerName"), forbidden("spec.ephemeralContainers[0].ports"),
			forbidden("spec.ephemeralContainers[0].volumeMounts[0].subPath"))},
	})
}

func TestValidatePorts(t *testing.T) {
	port := func(p *v1.Pod) *v1.ContainerPort { return &p.Spec.Containers[0].Ports[0] }
	runValidationCases(t, []validationCase{
		{"containerPort missing", func(p *v1.Pod) { port(p).ContainerPort = 0 }, expectErrs(required(c0("ports[0].containerPort")))},
		{"containerPort too big", func(p *v1.Pod) { port(p).ContainerPort = 70000 }, expectErrs(invalid(c0("ports[0].containerPort")))},
		{"hostPort too big", func(p *v1.Pod) { port(p).HostPort = 70000 }, expectErrs(invalid(c0("ports[0].hostPort")))},
		{"hostPort negative", func(p *v1.Pod) { port(p).HostPort = -1 }, expectErrs(invalid(c0("ports[0].hostPort")))},
		{"protocol unknown", func(p *v1.Pod) { port(p).Protocol = "HTTP" }, expectErrs(unsupported(c0("ports[0].protocol")))},
		{"protocol empty", func(p *v1.Pod) { port(p).Protocol = "" }, expectErrs(required(c0("ports[0].protocol")))},
		{"name not an IANA_SVC_NAME", func(p *v1.Pod) { port(p).Name = "Http" }, expectErrs(invalid(c0("ports[0].name")))},
		{"name too long", func(p *v1.Pod) { port(p).Name = "a-very-long-port-name" }, expectErrs(invalid(c0("ports[0].name")))},
		{"duplicate name", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP})
		}, expectErrs(duplicate(c0("ports[1].name")))},
		{"host port bound twice across containers", func(p *v1.Pod) {
			port(p).HostPort = 80
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "other", Image: "x",
				Ports: []v1.ContainerPort{{ContainerPort: 8081, HostPort: 80}}})
			SetDefaults(p)
		}, expectErrs(duplicate("spec.containers[1].ports[0].hostPort"))},
		{"host port bound twice within an init container", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x",
				Ports: []v1.ContainerPort{{ContainerPort: 1, HostPort: 80}, {ContainerPort: 2, HostPort: 80}}}}
			SetDefaults(p)
		}, expectErrs(duplicate("spec.initContainers[0].ports[1].hostPort"))},
		{"hostNetwork with a different hostPort", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			port(p).HostPort = 80
		}, expectErrs(invalid(c0("ports[0].hostPort")))},
	})
}

func TestValidateEnv(t *testing.T) {
	env := func(p *v1.Pod, ev ...v1.EnvVar) { p.Spec.Containers[0].Env = ev }
	ref := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	cmRef := &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"}
	runValidationCases(t, []validationCase{
		{"name missing", func(p *v1.Pod) { env(p, v1.EnvVar{Value: "x"}) }, expectErrs(required(c0("env[0].name")))},
		{"name with '='", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A=B"}) }, expectErrs(invalid(c0("env[0].name")))},
		{"name with a control character", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A\tB"}) }, expectErrs(invalid(c0("env[0].name")))},
		{"valueFrom without a source", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{}}) },
			expectErrs(invalid(c0("env[0].valueFrom")))},
		{"valueFrom with two sources", func(p *v1.Pod) {
			src := ref("metadata.name")
			src.ConfigMapKeyRef = cmRef
			env(p, v1.EnvVar{Name: "A", ValueFrom: src})
		}, expectErrs(invalid(c0("env[0].valueFrom")))},
		{"value and valueFrom", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", Value: "x", ValueFrom: ref("metadata.name")}) },
			expectErrs(invalid(c0("env[0].valueFrom")))},
		{"fieldRef known but not for env", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: ref("spec.restartPolicy")}) },
			expectErrs(unsupported(c0("env[0].valueFrom.fieldRef.fieldPath")))},
		{"fieldRef whole labels map", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: ref("metadata.labels")}) },
			expectErrs(unsupported(c0("env[0].valueFrom.fieldRef.fieldPath")))},
		{"fieldRef unknown", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: ref("metadata.foo")}) },
			expectErrs(invalid(c0("env[0].valueFrom.fieldRef.fieldPath")))},
		{"fieldRef subscript on a plain field", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: ref("metadata.name['x']")}) },
			expectErrs(invalid(c0("env[0].valueFrom.fieldRef.fieldPath")))},
		{"fieldRef bad label key", func(p *v1.Pod) { env(p, v1.EnvVar{Name: "A", ValueFrom: ref("metadata.labels['-x']")}) },
			expectErrs(invalid(c0("env[0].valueFrom.fieldRef")))},
		{"fieldRef apiVersion missing", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		}, expectErrs(required(c0("env[0].valueFrom.fieldRef.apiVersion")))},
		{"fieldRef apiVersion v2", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}})
		}, expectErrs(invalid(c0("env[0].valueFrom.fieldRef.fieldPath")))},
		{"configMapKeyRef key missing", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}})
		}, expectErrs(required(c0("env[0].valueFrom.configMapKeyRef.key")))},
		{"secretKeyRef bad name and key", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "S"}, Key: "a/b"}}})
		}, expectErrs(invalid(c0("env[0].valueFrom.secretKeyRef.name")), invalid(c0("env[0].valueFrom.secretKeyRef.key")))},
		{"resourceFieldRef unknown resource", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}}})
		}, expectErrs(unsupported(c0("env[0].valueFrom.resourceFieldRef.resource")))},
		{"resourceFieldRef cpu divisor", func(p *v1.Pod) {
			env(p, v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1Mi")}}})
		}, expectErrs(invalid(c0("env[0].valueFrom.resourceFieldRef.divisor")))},
		{"envFrom without a source", func(p *v1.Pod) { p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "X_"}} },
			expectErrs(invalid(c0("envFrom")))},
		{"envFrom prefix with '='", func(p *v1.Pod) {
			p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "X=", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}
		}, expectErrs(invalid(c0("envFrom[0].prefix")))},
	})
}
