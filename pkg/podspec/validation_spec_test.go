package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidateVolumes(t *testing.T) {
	// Mounts of an invalid volume would also be reported (as not found).
	vol := func(p *v1.Pod, src v1.VolumeSource) {
		p.Spec.Volumes[0].VolumeSource = src
		p.Spec.Containers[0].VolumeMounts = nil
	}
	badType, mode := v1.HostPathType("Folder"), int32(01000)
	tooShort := int64(60)
	runValidationCases(t, []validationCase{
		{"name not a DNS label", func(p *v1.Pod) {
			p.Spec.Volumes[0].Name = "Data"
			p.Spec.Containers[0].VolumeMounts = nil
		}, expectErrs(invalid("spec.volumes[0].name"))},
		{"name missing", func(p *v1.Pod) {
			p.Spec.Volumes[0].Name = ""
			p.Spec.Containers[0].VolumeMounts = nil
		}, expectErrs(required("spec.volumes[0].name"))},
		{"duplicate name", func(p *v1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) },
			expectErrs(duplicate("spec.volumes[1].name"))},
		{"no source", func(p *v1.Pod) { vol(p, v1.VolumeSource{}) }, expectErrs(required("spec.volumes[0]"))},
		{"two sources", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}, HostPath: &v1.HostPathVolumeSource{Path: "/x"}})
		}, expectErrs(forbidden("spec.volumes[0].hostPath"))},
		{"emptyDir negative sizeLimit, and its mount", func(p *v1.Pod) { p.Spec.Volumes[0].EmptyDir.SizeLimit = ptr(resource.MustParse("-1")) },
			expectErrs(forbidden("spec.volumes[0].emptyDir.sizeLimit"), notFound(c0("volumeMounts[0].name")))},
		{"hostPath without path", func(p *v1.Pod) { vol(p, v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{}}) },
			expectErrs(required("spec.volumes[0].hostPath.path"))},
		{"hostPath with ..", func(p *v1.Pod) { vol(p, v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/../etc"}}) },
			expectErrs(invalid("spec.volumes[0].hostPath.path"))},
		{"hostPath type unknown", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv", Type: &badType}})
		},
			expectErrs(unsupported("spec.volumes[0].hostPath.type"))},
		{"secret without secretName", func(p *v1.Pod) { vol(p, v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}) },
			expectErrs(required("spec.volumes[0].secret.secretName"))},
		{"configMap bad modes and item", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"},
				DefaultMode: &mode, Items: []v1.KeyToPath{{Key: "k", Path: "/abs", Mode: &mode}, {Path: "..data"}}}})
		}, expectErrs(invalid("spec.volumes[0].configMap.defaultMode"), invalid("spec.volumes[0].configMap.items[0].path"),
			invalid("spec.volumes[0].configMap.items[0].mode"), required("spec.volumes[0].configMap.items[1].key"),
			invalid("spec.volumes[0].configMap.items[1].path"))},
		{"configMap without name", func(p *v1.Pod) { vol(p, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}) },
			expectErrs(required("spec.volumes[0].configMap.name"))},
		{"downwardAPI field not projectable", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "node", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}}})
		}, expectErrs(unsupported("spec.volumes[0].downwardAPI.fieldRef.fieldPath"))},
		{"downwardAPI item without a source", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "x"}}}})
		}, expectErrs(required("spec.volumes[0].downwardAPI"))},
		{"downwardAPI resourceFieldRef without container", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}}}})
		}, expectErrs(required("spec.volumes[0].downwardAPI.resourceFieldRef.containerName"))},
		{"projected token without serviceAccountName", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}})
			SetDefaults(p)
		}, expectErrs(forbidden("spec.volumes[0].projected.sources[0].serviceAccountToken"))},
		{"projected token rules", func(p *v1.Pod) {
			p.Spec.ServiceAccountName = "sa"
			vol(p, v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: &tooShort}}}}})
		}, expectErrs(invalid("spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"),
			required("spec.volumes[0].projected.path"))},
		{"projected sources", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{Secret: &v1.SecretProjection{Items: []v1.KeyToPath{{Key: "k", Path: "same"}}},
					ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Items: []v1.KeyToPath{{Key: "k", Path: "same"}}}},
			}}})
		}, expectErrs(required("spec.volumes[0].projected.sources[0].secret.name"), invalid("spec.volumes[0].projected"),
			forbidden("spec.volumes[0].projected.sources[0]"))},
		{"persistentVolumeClaim without claimName", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}})
		}, expectErrs(required("spec.volumes[0].persistentVolumeClaim.claimName"))},
		{"nfs relative path", func(p *v1.Pod) { vol(p, v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "exports"}}) },
			expectErrs(invalid("spec.volumes[0].nfs.path"))},
		{"csi without driver", func(p *v1.Pod) { vol(p, v1.VolumeSource{CSI: &v1.CSIVolumeSource{}}) },
			expectErrs(required("spec.volumes[0].csi.driver"), invalid("spec.volumes[0].csi.driver"))},
		{"image volume without reference", func(p *v1.Pod) {
			vol(p, v1.VolumeSource{Image: &v1.ImageVolumeSource{PullPolicy: v1.PullAlways}})
		}, expectErrs(required("spec.volumes[0].image.reference"))},
	})
}

func TestValidateVolumeMounts(t *testing.T) {
	mount := func(p *v1.Pod) *v1.VolumeMount { return &p.Spec.Containers[0].VolumeMounts[0] }
	bidi, rro := v1.MountPropagationBidirectional, v1.RecursiveReadOnlyEnabled
	runValidationCases(t, []validationCase{
		{"unknown volume", func(p *v1.Pod) { mount(p).Name = "nope" }, expectErrs(notFound(c0("volumeMounts[0].name")))},
		{"name missing", func(p *v1.Pod) { mount(p).Name = "" }, expectErrs(required(c0("volumeMounts[0].name")), notFound(c0("volumeMounts[0].name")))},
		{"mountPath missing", func(p *v1.Pod) { mount(p).MountPath = "" }, expectErrs(required(c0("volumeMounts[0].mountPath")))},
		{"mountPath used twice", func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, *mount(p))
		}, expectErrs(invalid(c0("volumeMounts[1].mountPath")))},
		// Upstream reports subPath problems without the mount's index.
		{"subPath absolute", func(p *v1.Pod) { mount(p).SubPath = "/etc" }, expectErrs(invalid(c0("volumeMounts.subPath")))},
		{"subPath with ..", func(p *v1.Pod) { mount(p).SubPath = "a/../../b" }, expectErrs(invalid(c0("volumeMounts.subPath")))},
		{"subPath and subPathExpr", func(p *v1.Pod) { mount(p).SubPath, mount(p).SubPathExpr = "a", "$(B)" },
			expectErrs(invalid(c0("volumeMounts[0].subPathExpr")))},
		{"bidirectional needs privileged", func(p *v1.Pod) { mount(p).MountPropagation = &bidi },
			expectErrs(forbidden(c0("volumeMounts.mountPropagation")))},
		{"recursiveReadOnly needs readOnly", func(p *v1.Pod) { mount(p).RecursiveReadOnly = &rro },
			expectErrs(forbidden(c0("volumeMounts.recursiveReadOnly")))},
	})
}

func TestValidateResources(t *testing.T) {
	res := func(p *v1.Pod, limits, requests v1.ResourceList) {
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: limits, Requests: requests}
	}
	q := resource.MustParse
	runValidationCases(t, []validationCase{
		{"negative request", func(p *v1.Pod) { res(p, nil, v1.ResourceList{"cpu": q("-1")}) },
			expectErrs(invalid(c0("resources.requests[cpu]")))},
		{"negative limit", func(p *v1.Pod) { res(p, v1.ResourceList{"memory": q("-1Mi")}, nil) },
			expectErrs(invalid(c0("resources.limits[memory]")))},
		{"request above limit", func(p *v1.Pod) { res(p, v1.ResourceList{"cpu": q("1")}, v1.ResourceList{"cpu": q("2")}) },
			expectErrs(invalid(c0("resources.requests")))},
		{"unknown unprefixed resource", func(p *v1.Pod) { res(p, v1.ResourceList{"gpu": q("1")}, nil) },
			expectErrs(invalid(c0("resources.limits[gpu]")))},
		{"extended resource request differs from limit", func(p *v1.Pod) {
			res(p, v1.ResourceList{"example.com/gpu": q("2")}, v1.ResourceList{"example.com/gpu": q("1")})
		}, expectErrs(invalid(c0("resources.requests")))},
		{"extended resource without limit", func(p *v1.Pod) { res(p, nil, v1.ResourceList{"example.com/gpu": q("1")}) },
			expectErrs(required(c0("resources.limits")))},
		{"extended resource fraction", func(p *v1.Pod) { res(p, v1.ResourceList{"example.com/gpu": q("500m")}, nil) },
			expectErrs(invalid(c0("resources.limits[example.com/gpu]")))},
		{"hugepages alone", func(p *v1.Pod) { res(p, v1.ResourceList{"hugepages-2Mi": q("2Mi")}, nil) },
			expectErrs(forbidden(c0("resources")))},
	})
}

func TestValidateProbesAndLifecycle(t *testing.T) {
	exec := v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	probe := func(p v1.Probe) *v1.Probe {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{LivenessProbe: &p}}}}
		SetDefaults(pod)
		return pod.Spec.Containers[0].LivenessProbe
	}
	grace := int64(-1)
	runValidationCases(t, []validationCase{
		{"no handler", func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe = probe(v1.Probe{}) }, expectErrs(required(c0("livenessProbe")))},
		{"two handlers", func(p *v1.Pod) {
			h := exec
			h.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromInt32(80)}
			p.Spec.Containers[0].LivenessProbe = probe(v1.Probe{ProbeHandler: h})
		}, expectErrs(forbidden(c0("livenessProbe.tcpSocket")))},
		{"exec without command", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = probe(v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}})
		}, expectErrs(required(c0("livenessProbe.exec.command")))},
		{"liveness successThreshold", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = probe(v1.Probe{ProbeHandler: exec, SuccessThreshold: 2})
		},
			expectErrs(invalid(c0("livenessProbe.successThreshold")))},
		{"startup successThreshold", func(p *v1.Pod) {
			p.Spec.Containers[0].StartupProbe = probe(v1.Probe{ProbeHandler: exec, SuccessThreshold: 2})
		},
			expectErrs(invalid(c0("startupProbe.successThreshold")))},
		{"readiness may exceed one success but not set a grace period", func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = probe(v1.Probe{ProbeHandler: exec, SuccessThreshold: 2, TerminationGracePeriodSeconds: ptr(int64(3))})
		}, expectErrs(invalid(c0("readinessProbe.terminationGracePeriodSeconds")))},
		{"negative numbers", func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = probe(v1.Probe{ProbeHandler: exec, PeriodSeconds: -1, InitialDelaySeconds: -1})
		}, expectErrs(invalid(c0("readinessProbe.periodSeconds")), invalid(c0("readinessProbe.initialDelaySeconds")))},
		{"probe grace period zero", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = probe(v1.Probe{ProbeHandler: exec, TerminationGracePeriodSeconds: ptr(int64(0))})
		}, expectErrs(invalid(c0("livenessProbe.terminationGracePeriodSeconds")))},
		{"httpGet bad port name", func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = probe(v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http_port")}}})
		}, expectErrs(invalid(c0("readinessProbe.httpGet.port")))},
		{"httpGet port zero, bad scheme and header", func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = probe(v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Scheme: "FTP",
				HTTPHeaders: []v1.HTTPHeader{{Name: "Bad Header"}}}}})
		}, expectErrs(invalid(c0("readinessProbe.httpGet.port")), unsupported(c0("readinessProbe.httpGet.scheme")),
			invalid(c0("readinessProbe.httpGet.httpHeaders")))},
		{"grpc port out of range", func(p *v1.Pod) {
			p.Spec.Containers[0].StartupProbe = probe(v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 70000}}})
		}, expectErrs(invalid(c0("startupProbe.grpc.port")))},
		{"preStop sleep longer than grace period", func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 31}}}
		}, expectErrs(invalid(c0("lifecycle.preStop.sleep")))},
		{"postStart without handler", func(p *v1.Pod) { p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{}} },
			expectErrs(required(c0("lifecycle.postStart")))},
		{"negative pod grace period", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &grace },
			expectErrs(invalid("spec.terminationGracePeriodSeconds"))},
		{"pod grace period missing", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			expectErrs(required("spec.terminationGracePeriodSeconds"))},
	})
}

func TestValidatePodFields(t *testing.T) {
	zero := int64(0)
	f := false
	runValidationCases(t, []validationCase{
		{"activeDeadlineSeconds zero", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = &zero }, expectErrs(invalid("spec.activeDeadlineSeconds"))},
		{"hostname and subdomain", func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "web.0", "Web" },
			expectErrs(invalid("spec.hostname"), invalid("spec.subdomain"))},
		{"names of referenced objects", func(p *v1.Pod) {
			p.Spec.ServiceAccountName, p.Spec.NodeName, p.Spec.PriorityClassName = "SA", "node_1", "-high"
		}, expectErrs(invalid("spec.serviceAccountName"), invalid("spec.nodeName"), invalid("spec.priorityClassName"))},
		{"nodeSelector key and value", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"bad key": "ok", "ok": "bad value"} },
			expectErrs(invalid("spec.nodeSelector"), invalid("spec.nodeSelector"))},
		{"hostAliases", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.0.0.300", Hostnames: []string{"Bad_Host"}}}
		},
			expectErrs(invalid("spec.hostAliases[0].ip"), invalid("spec.hostAliases[0].hostnames[0]"))},
		{"readinessGates", func(p *v1.Pod) { p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "bad gate"}} },
			expectErrs(invalid("spec.readinessGates[0].conditionType"))},
		{"schedulingGates duplicate, and nodeName while gated", func(p *v1.Pod) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}, {Name: "example.com/wait"}}
			p.Spec.NodeName = "node-1"
		}, expectErrs(duplicate("spec.schedulingGates[1]"), forbidden("spec.nodeName"))},
		{"os name", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: "plan9"} }, expectErrs(unsupported("spec.os"))},
		{"preemptionPolicy", func(p *v1.Pod) { p.Spec.PreemptionPolicy = ptr(v1.PreemptionPolicy("Sometimes")) },
			expectErrs(unsupported("spec.preemptionPolicy"))},
		{"hostUsers=false with host namespaces", func(p *v1.Pod) {
			p.Spec.HostUsers, p.Spec.HostPID, p.Spec.HostIPC = &f, true, true
		}, expectErrs(forbidden("spec.HostPID"), forbidden("spec.HostIPC"))},
	})
}

func TestValidateDNS(t *testing.T) {
	none := func(p *v1.Pod, cfg *v1.PodDNSConfig) { p.Spec.DNSPolicy, p.Spec.DNSConfig = v1.DNSNone, cfg }
	runValidationCases(t, []validationCase{
		{"dnsPolicy unknown", func(p *v1.Pod) { p.Spec.DNSPolicy = "Google" }, expectErrs(unsupported("spec.dnsPolicy"))},
		{"None without dnsConfig", func(p *v1.Pod) { none(p, nil) }, expectErrs(required("spec.dnsConfig"))},
		{"None without nameservers", func(p *v1.Pod) { none(p, &v1.PodDNSConfig{Searches: []string{"a"}}) },
			expectErrs(required("spec.dnsConfig.nameservers"))},
		{"too many nameservers", func(p *v1.Pod) {
			none(p, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "1.0.0.1"}})
		},
			expectErrs(invalid("spec.dnsConfig.nameservers"))},
		{"nameserver not an IP", func(p *v1.Pod) { none(p, &v1.PodDNSConfig{Nameservers: []string{"dns.local"}}) },
			expectErrs(invalid("spec.dnsConfig.nameservers[0]"))},
		{"too many searches", func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: strings.Split(strings.Repeat("a,", 32)+"a", ",")}
		}, expectErrs(invalid("spec.dnsConfig.searches"))},
		{"bad search and empty option", func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"Bad.Domain"}, Options: []v1.PodDNSConfigOption{{}}}
		}, expectErrs(invalid("spec.dnsConfig.searches[0]"), required("spec.dnsConfig.options[0]"))},
	})
}

func TestValidateSecurityContext(t *testing.T) {
	neg, t1, f := int64(-1), true, false
	unmasked, localhost := v1.UnmaskedProcMount, v1.SeccompProfileTypeLocalhost
	sc := func(p *v1.Pod) *v1.PodSecurityContext { return p.Spec.SecurityContext }
	csc := func(p *v1.Pod, s v1.SecurityContext) { p.Spec.Containers[0].SecurityContext = &s }
	runValidationCases(t, []validationCase{
		{"pod runAsUser negative", func(p *v1.Pod) { sc(p).RunAsUser = &neg }, expectErrs(invalid("spec.securityContext.runAsUser"))},
		{"pod groups negative", func(p *v1.Pod) {
			sc(p).RunAsGroup, sc(p).FSGroup, sc(p).SupplementalGroups = &neg, &neg, []int64{1, -1}
		},
			expectErrs(invalid("spec.securityContext.runAsGroup"), invalid("spec.securityContext.fsGroup"),
				invalid("spec.securityContext.supplementalGroups[1]"))},
		{"shareProcessNamespace with hostPID", func(p *v1.Pod) { p.Spec.ShareProcessNamespace, p.Spec.HostPID = &t1, true },
			expectErrs(invalid("spec.securityContext.shareProcessNamespace"))},
		{"sysctls", func(p *v1.Pod) {
			sc(p).Sysctls = []v1.Sysctl{{Name: "Net.Bad"}, {Name: ""}, {Name: "kernel.msgmax"}, {Name: "kernel.msgmax"}}
		}, expectErrs(invalid("spec.securityContext.sysctls[0].name"), required("spec.securityContext.sysctls[1].name"),
			duplicate("spec.securityContext.sysctls[3].name"))},
		{"net sysctl with hostNetwork", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			sc(p).Sysctls = []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		}, expectErrs(invalid("spec.securityContext.sysctls[0].name"))},
		{"seccomp Localhost without profile", func(p *v1.Pod) { sc(p).SeccompProfile = &v1.SeccompProfile{Type: localhost} },
			expectErrs(required("spec.securityContext.seccompProfile.localhostProfile"))},
		{"seccomp type missing", func(p *v1.Pod) { sc(p).SeccompProfile = &v1.SeccompProfile{} },
			expectErrs(required("spec.securityContext.seccompProfile.type"))},
		{"appArmor type unknown", func(p *v1.Pod) { sc(p).AppArmorProfile = &v1.AppArmorProfile{Type: "Strict"} },
			expectErrs(unsupported("spec.securityContext.appArmorProfile.type"))},
		{"fsGroupChangePolicy unknown", func(p *v1.Pod) { sc(p).FSGroupChangePolicy = ptr(v1.PodFSGroupChangePolicy("Never")) },
			expectErrs(unsupported("spec.securityContext.fsGroupChangePolicy"))},
		{"container runAsUser negative", func(p *v1.Pod) { csc(p, v1.SecurityContext{RunAsUser: &neg}) },
			expectErrs(invalid(c0("securityContext.runAsUser")))},
		{"privileged without privilege escalation", func(p *v1.Pod) {
			csc(p, v1.SecurityContext{Privileged: &t1, AllowPrivilegeEscalation: &f})
		}, expectErrs(invalid(c0("securityContext")))},
		{"CAP_SYS_ADMIN without privilege escalation", func(p *v1.Pod) {
			csc(p, v1.SecurityContext{AllowPrivilegeEscalation: &f, Capabilities: &v1.Capabilities{Add: []v1.Capability{"CAP_SYS_ADMIN"}}})
		}, expectErrs(invalid(c0("securityContext")))},
		{"Unmasked procMount needs hostUsers=false", func(p *v1.Pod) { csc(p, v1.SecurityContext{ProcMount: &unmasked}) },
			expectErrs(invalid(c0("securityContext.procMount")))},
		{"Unmasked procMount with hostUsers=false", func(p *v1.Pod) {
			p.Spec.HostUsers = &f
			csc(p, v1.SecurityContext{ProcMount: &unmasked})
		}, nil},
	})
}

func TestValidateTolerations(t *testing.T) {
	secs := int64(10)
	tol := func(p *v1.Pod, ts ...v1.Toleration) { p.Spec.Tolerations = ts }
	runValidationCases(t, []validationCase{
		{"operator unknown", func(p *v1.Pod) { tol(p, v1.Toleration{Key: "k", Operator: "In"}) },
			expectErrs(unsupported("spec.tolerations[0].operator"))},
		{"effect unknown", func(p *v1.Pod) { tol(p, v1.Toleration{Key: "k", Effect: "NoAdmit"}) },
			expectErrs(unsupported("spec.tolerations[0].effect"))},
		{"empty key needs Exists", func(p *v1.Pod) { tol(p, v1.Toleration{Operator: v1.TolerationOpEqual}) },
			expectErrs(invalid("spec.tolerations[0].operator"))},
		{"Exists with a value", func(p *v1.Pod) { tol(p, v1.Toleration{Key: "k", Operator: v1.TolerationOpExists, Value: "v"}) },
			expectErrs(invalid("spec.tolerations[0].operator"))},
		{"Equal with a bad value", func(p *v1.Pod) { tol(p, v1.Toleration{Key: "k", Value: "not valid"}) },
			expectErrs(invalid("spec.tolerations[0].operator"))},
		{"tolerationSeconds needs NoExecute", func(p *v1.Pod) {
			tol(p, v1.Toleration{Key: "k", Effect: v1.TaintEffectNoSchedule, TolerationSeconds: &secs})
		}, expectErrs(invalid("spec.tolerations[0].effect"))},
		{"bad key", func(p *v1.Pod) { tol(p, v1.Toleration{Key: "bad key", Operator: v1.TolerationOpExists}) },
			expectErrs(invalid("spec.tolerations[0].key"))},
	})
}
