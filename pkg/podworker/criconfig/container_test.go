package criconfig

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

func ptrTo[T any](v T) *T { return &v }

// TestExpand uses the cases of upstream third_party/forked/golang/expansion.
func TestExpand(t *testing.T) {
	vars := map[string]string{
		"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": "",
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	cases := []struct{ name, in, want string }{
		{"whole string", "$(VAR_A)", "A"},
		{"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
		{"beginning", "$(VAR_A)-1", "A-1"},
		{"middle", "___$(VAR_B)___", "___B___"},
		{"end", "___$(VAR_C)", "___C"},
		{"compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
		{"escape & expansion", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
		{"compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
		{"mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"},
		{"backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"},
		{"backslash escape ignored twice", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"},
		{"lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"},
		{"nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
		{"nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"value is a reference", "$(VAR_REF)", "$(VAR_A)"},
		{"value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"},
		{"empty var", "foo$(VAR_EMPTY)bar", "foobar"},
		{"unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
		{"expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"},
		{"shell special vars pass through", "$?_boo_$!", "$?_boo_$!"},
		{"bare operators are ignored", "$VAR_A", "$VAR_A"},
		{"undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"},
		{"multiple undefined vars are passed through", "$(VAR_DNE1)$(VAR_DNE2)", "$(VAR_DNE1)$(VAR_DNE2)"},
		{"multiple mixed undefined vars are passed through", "$(VAR_A)$(VAR_DNE)", "A$(VAR_DNE)"},
		{"dollar sign after", "$(VAR_A)$", "A$"},
		{"trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"},
		{"trailing incomplete expression, no content", "$(VAR_C)_______$(", "C_______$("},
		{"operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"},
		{"shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"},
		{"lots of $( in middle", "--$($($($($--", "--$($($($($--"},
		{"lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("},
		{"lots of $( at end", "foo0--$($($($(", "foo0--$($($($("},
		{"escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"},
		{"newline not expanded", "\n", "\n"},
		{"no dollar at all", "plain", "plain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := expand(tc.in, lookup); got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func envPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "dapi", "ns1", "uid-9"
	pod.Labels = map[string]string{"x": "lx", "app": "web"}
	pod.Annotations = map[string]string{"y": "ay"}
	pod.Spec.ServiceAccountName = "robot"
	pod.Spec.Containers = []v1.Container{{
		Name: "main", Image: "busybox:1",
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}, {Name: "side", Image: "busybox:1"}}
	return pod
}

var (
	envNode = Node{
		Name: "node1", IP: "192.0.2.1",
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
	}
	envInputs = ContainerInputs{PodIPs: []string{"10.1.2.3", "fd00::3"}}
)

func fieldEnv(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
}

func resEnv(name, container, res, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

func TestMakeEnv(t *testing.T) {
	cmRef := func(optional *bool) v1.EnvVar {
		return v1.EnvVar{Name: "CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k", Optional: optional}}}
	}
	secRef := func(optional *bool) v1.EnvVar {
		return v1.EnvVar{Name: "SEC", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k", Optional: optional}}}
	}
	cases := []struct {
		name    string
		env     []v1.EnvVar
		envFrom []v1.EnvFromSource
		want    [][2]string
		wantErr bool
		// hostNetwork: the pod is on the node's network, its sandbox
		// reports no IPs.
		hostNetwork bool
	}{
		{name: "order kept, references to earlier vars, redefinition keeps position",
			env: []v1.EnvVar{{Name: "A", Value: "a"}, {Name: "B", Value: "$(A)-b"}, {Name: "C", Value: "$(D)"},
				{Name: "D", Value: "d"}, {Name: "A", Value: "z"}, {Name: "E", Value: "$$(A)$(A)"}},
			want: [][2]string{{"A", "z"}, {"B", "a-b"}, {"C", "$(D)"}, {"D", "d"}, {"E", "$(A)z"}}},
		{name: "fieldRef values",
			env: []v1.EnvVar{fieldEnv("N", "metadata.name"), fieldEnv("NS", "metadata.namespace"), fieldEnv("U", "metadata.uid"),
				fieldEnv("L", "metadata.labels['x']"), fieldEnv("AN", "metadata.annotations['y']"),
				fieldEnv("MISSING", "metadata.labels['nope']"), fieldEnv("IP", "status.podIP"), fieldEnv("IPS", "status.podIPs"),
				fieldEnv("NODE", "spec.nodeName"), fieldEnv("HOST", "status.hostIP"), fieldEnv("SA", "spec.serviceAccountName"),
				{Name: "REF", Value: "$(N).$(NS)"}},
			want: [][2]string{{"N", "dapi"}, {"NS", "ns1"}, {"U", "uid-9"}, {"L", "lx"}, {"AN", "ay"}, {"MISSING", ""},
				{"IP", "10.1.2.3"}, {"IPS", "10.1.2.3,fd00::3"}, {"NODE", "node1"}, {"HOST", "192.0.2.1"}, {"SA", "robot"},
				{"REF", "dapi.ns1"}}},
		{name: "hostNetwork: the pod's IPs are the node's", hostNetwork: true,
			env: []v1.EnvVar{fieldEnv("POD_IP", "status.podIP"), fieldEnv("HOST_IP", "status.hostIP"),
				fieldEnv("POD_IPS", "status.podIPs"), fieldEnv("HOST_IPS", "status.hostIPs")},
			want: [][2]string{{"POD_IP", "192.0.2.1"}, {"HOST_IP", "192.0.2.1"}, {"POD_IPS", "192.0.2.1"}, {"HOST_IPS", "192.0.2.1"}}},
		{name: "unsupported fieldPath", env: []v1.EnvVar{fieldEnv("X", "spec.bogus")}, wantErr: true},
		{name: "resourceFieldRef with divisors and allocatable default",
			env: []v1.EnvVar{resEnv("CPU_LIM_M", "", "limits.cpu", "1m"), resEnv("CPU_LIM", "", "limits.cpu", ""),
				resEnv("CPU_REQ", "", "requests.cpu", ""), resEnv("MEM_LIM_MI", "", "limits.memory", "1Mi"),
				resEnv("MEM_REQ", "", "requests.memory", ""), resEnv("SIDE_CPU_LIM", "side", "limits.cpu", ""),
				resEnv("SIDE_MEM_LIM_GI", "side", "limits.memory", "1Gi"), resEnv("SIDE_CPU_REQ", "side", "requests.cpu", "")},
			want: [][2]string{{"CPU_LIM_M", "500"}, {"CPU_LIM", "1"}, {"CPU_REQ", "1"}, {"MEM_LIM_MI", "64"},
				{"MEM_REQ", "33554432"}, {"SIDE_CPU_LIM", "4"}, {"SIDE_MEM_LIM_GI", "8"}, {"SIDE_CPU_REQ", "0"}}},
		{name: "resourceFieldRef to an unknown container", env: []v1.EnvVar{resEnv("X", "nope", "limits.cpu", "")}, wantErr: true},
		{name: "configMapKeyRef, not optional", env: []v1.EnvVar{cmRef(nil)}, wantErr: true},
		{name: "configMapKeyRef, optional: skipped", env: []v1.EnvVar{{Name: "A", Value: "a"}, cmRef(ptrTo(true))},
			want: [][2]string{{"A", "a"}}},
		{name: "secretKeyRef, not optional", env: []v1.EnvVar{secRef(ptrTo(false))}, wantErr: true},
		{name: "secretKeyRef, optional: skipped", env: []v1.EnvVar{secRef(ptrTo(true))}, want: [][2]string{}},
		{name: "envFrom configMap, not optional",
			envFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			wantErr: true},
		{name: "envFrom secret, optional",
			envFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Optional: ptrTo(true)}}},
			want:    [][2]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[0]
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			in := envInputs
			if tc.hostNetwork {
				pod.Spec.HostNetwork, in.PodIPs = true, nil
			}
			kvs, err := makeEnv(pod, c, envNode, in)
			if tc.wantErr {
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a *ConfigError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := [][2]string{}
			for _, kv := range kvs {
				got = append(got, [2]string{kv.Key, string(kv.Value)})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

// An unset container limit reads as the pod-level limit when there is
// one, else as the node's allocatable.
func TestMakeEnvPodLevelLimits(t *testing.T) {
	pod := envPod()
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}}
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{resEnv("SIDE_MEM_LIM_GI", "side", "limits.memory", "1Gi"), resEnv("SIDE_CPU_LIM", "side", "limits.cpu", ""),
		resEnv("MEM_LIM_MI", "", "limits.memory", "1Mi")}
	kvs, err := makeEnv(pod, c, envNode, envInputs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.Key] = string(kv.Value)
	}
	if want := map[string]string{"SIDE_MEM_LIM_GI": "2", "SIDE_CPU_LIM": "4", "MEM_LIM_MI": "64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
}

func TestContainerConfig(t *testing.T) {
	pod := envPod()
	pod.Spec.TerminationGracePeriodSeconds = ptrTo(int64(45))
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "GREETING", Value: "hi"}, fieldEnv("POD", "metadata.name")}
	c.Command = []string{"/bin/sh", "-c", "echo $(GREETING) $(POD) $$(GREETING) $(NOPE)"}
	c.Args = []string{"$(POD)"}
	c.WorkingDir, c.TTY = "/work", true
	c.TerminationMessagePath = "/dev/termination-log"
	c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	in := envInputs
	in.ImageRef, in.RestartCount = "sha256:abc", 2
	in.TermMessagePath, in.EtcHostsPath = "/var/lib/x/termlog", "/var/lib/x/etc-hosts"

	cfg, err := ContainerConfig(pod, c, envNode, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/sh", "-c", "echo hi dapi $(GREETING) $(NOPE)"}; !reflect.DeepEqual(cfg.Command, want) {
		t.Errorf("command = %q, want %q", cfg.Command, want)
	}
	if want := []string{"dapi"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args = %q, want %q", cfg.Args, want)
	}
	if cfg.Metadata.Name != "main" || cfg.Metadata.Attempt != 2 || cfg.LogPath != "main/2.log" {
		t.Errorf("metadata/logPath = %v / %q", cfg.Metadata, cfg.LogPath)
	}
	if cfg.Image.Image != "sha256:abc" || cfg.Image.UserSpecifiedImage != "busybox:1" {
		t.Errorf("image = %v", cfg.Image)
	}
	if cfg.WorkingDir != "/work" || !cfg.Tty {
		t.Errorf("workingDir/tty = %q/%v", cfg.WorkingDir, cfg.Tty)
	}
	wantLabels := map[string]string{runtime.LabelPodName: "dapi", runtime.LabelPodNamespace: "ns1",
		runtime.LabelPodUID: "uid-9", runtime.LabelContainerName: "main"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	a := cfg.Annotations
	if a[runtime.AnnotationContainerHash] != runtime.HashContainer(c) || a[runtime.AnnotationRestartCount] != "2" ||
		a[runtime.AnnotationPodTerminationGracePeriod] != "45" ||
		a[runtime.AnnotationTerminationMessagePath] != "/dev/termination-log" {
		t.Errorf("annotations = %v", a)
	}
	wantMounts := []*criv1.Mount{
		{ContainerPath: "/etc/hosts", HostPath: "/var/lib/x/etc-hosts", SelinuxRelabel: true},
		{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/x/termlog"},
	}
	if !reflect.DeepEqual(cfg.Mounts, wantMounts) {
		t.Errorf("mounts = %v, want %v", cfg.Mounts, wantMounts)
	}
	// A volume at /etc/hosts replaces the managed file.
	c.VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts", ReadOnly: true}}
	if _, err := ContainerConfig(pod, c, envNode, in); err == nil || err.Error() != `cannot find volume "h" to mount into container "main"` {
		t.Errorf("a mount of a missing volume: err %v", err)
	}
	in.Volumes = map[string]volume.Mounted{"h": {HostPath: "/srv/hosts"}}
	wantMounts = []*criv1.Mount{
		{ContainerPath: "/etc/hosts", HostPath: "/srv/hosts", Readonly: true},
		{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/x/termlog"},
	}
	if cfg, _ = ContainerConfig(pod, c, envNode, in); !reflect.DeepEqual(cfg.Mounts, wantMounts) {
		t.Errorf("with an /etc/hosts volume, mounts = %v, want %v", cfg.Mounts, wantMounts)
	}
	in.Volumes = nil
	// A config error stops the build.
	c.Env = append(c.Env, fieldEnv("BAD", "spec.bogus"))
	if _, err := ContainerConfig(pod, c, envNode, in); err == nil {
		t.Error("want an error for an unsupported fieldPath")
	}
}

func TestContainerResources(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name string
		res  v1.ResourceRequirements
		want *criv1.LinuxContainerResources
	}{
		{"best effort", v1.ResourceRequirements{}, &criv1.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
		{"burstable request", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("250m")}},
			&criv1.LinuxContainerResources{CpuShares: 256, OomScoreAdj: 999}},
		{"guaranteed", v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")}},
			&criv1.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000,
				MemoryLimitInBytes: 128 << 20, OomScoreAdj: -997}},
		{"tiny cpu limit gets the minimum quota", v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("1m")}, Limits: v1.ResourceList{v1.ResourceCPU: q("1m")}},
			&criv1.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: tc.res}}}}
			if got := containerResources(pod, &pod.Spec.Containers[0], 0); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("resources = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerSecurity(t *testing.T) {
	cases := []struct {
		name  string
		pod   *v1.PodSecurityContext
		c     *v1.SecurityContext
		spec  func(*v1.PodSpec)
		check func(t *testing.T, sc *criv1.LinuxContainerSecurityContext)
	}{
		{name: "pod runAsUser applies", pod: &v1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(3000))},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 3000 {
					t.Errorf("user/group = %v/%v", sc.RunAsUser, sc.RunAsGroup)
				}
			}},
		{name: "container runAsUser overrides the pod's", pod: &v1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(3000))},
			c: &v1.SecurityContext{RunAsUser: ptrTo(int64(2000))},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if sc.RunAsUser.GetValue() != 2000 || sc.RunAsGroup.GetValue() != 3000 {
					t.Errorf("user/group = %v/%v", sc.RunAsUser, sc.RunAsGroup)
				}
			}},
		{name: "no user set", check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
			if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.NoNewPrivs || sc.Privileged || sc.ReadonlyRootfs {
				t.Errorf("unexpected settings: %v", sc)
			}
			if !reflect.DeepEqual(sc.MaskedPaths, defaultMaskedPaths) || !reflect.DeepEqual(sc.ReadonlyPaths, defaultReadonlyPaths) {
				t.Errorf("masked/readonly = %v/%v, want the defaults", sc.MaskedPaths, sc.ReadonlyPaths)
			}
		}},
		{name: "allowPrivilegeEscalation false sets NoNewPrivs", c: &v1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false)},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if !sc.NoNewPrivs {
					t.Error("NoNewPrivs = false")
				}
			}},
		{name: "allowPrivilegeEscalation true", c: &v1.SecurityContext{AllowPrivilegeEscalation: ptrTo(true)},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if sc.NoNewPrivs {
					t.Error("NoNewPrivs = true")
				}
			}},
		{name: "privileged unmasks /proc", c: &v1.SecurityContext{Privileged: ptrTo(true)},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if !sc.Privileged || sc.MaskedPaths != nil || sc.ReadonlyPaths != nil {
					t.Errorf("privileged/masked/readonly = %v/%v/%v", sc.Privileged, sc.MaskedPaths, sc.ReadonlyPaths)
				}
			}},
		{name: "Unmasked procMount", c: &v1.SecurityContext{ProcMount: ptrTo(v1.UnmaskedProcMount)},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
					t.Errorf("masked/readonly = %v/%v", sc.MaskedPaths, sc.ReadonlyPaths)
				}
			}},
		{name: "capabilities and read-only rootfs",
			c: &v1.SecurityContext{ReadOnlyRootFilesystem: ptrTo(true),
				Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}}},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				want := &criv1.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}}
				if !reflect.DeepEqual(sc.Capabilities, want) || !sc.ReadonlyRootfs {
					t.Errorf("caps/readonly = %v/%v", sc.Capabilities, sc.ReadonlyRootfs)
				}
			}},
		{name: "supplemental groups and fsGroup", pod: &v1.PodSecurityContext{SupplementalGroups: []int64{10, 11}, FSGroup: ptrTo(int64(2000))},
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				got := map[int64]bool{}
				for _, g := range sc.SupplementalGroups {
					got[g] = true
				}
				if len(sc.SupplementalGroups) != 3 || !got[10] || !got[11] || !got[2000] {
					t.Errorf("supplemental groups = %v", sc.SupplementalGroups)
				}
			}},
		{name: "namespaces: default", check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
			want := &criv1.NamespaceOption{Network: criv1.NamespaceMode_POD, Pid: criv1.NamespaceMode_CONTAINER, Ipc: criv1.NamespaceMode_POD, UsernsOptions: nodeUserns()}
			if !reflect.DeepEqual(sc.NamespaceOptions, want) {
				t.Errorf("namespaces = %v", sc.NamespaceOptions)
			}
		}},
		{name: "namespaces: host network, IPC, PID",
			spec: func(s *v1.PodSpec) { s.HostNetwork, s.HostIPC, s.HostPID = true, true, true },
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				want := &criv1.NamespaceOption{Network: criv1.NamespaceMode_NODE, Pid: criv1.NamespaceMode_NODE, Ipc: criv1.NamespaceMode_NODE, UsernsOptions: nodeUserns()}
				if !reflect.DeepEqual(sc.NamespaceOptions, want) {
					t.Errorf("namespaces = %v", sc.NamespaceOptions)
				}
			}},
		{name: "namespaces: shared process namespace",
			spec: func(s *v1.PodSpec) { s.ShareProcessNamespace = ptrTo(true) },
			check: func(t *testing.T, sc *criv1.LinuxContainerSecurityContext) {
				if sc.NamespaceOptions.Pid != criv1.NamespaceMode_POD {
					t.Errorf("pid namespace = %v", sc.NamespaceOptions.Pid)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tc.pod, Containers: []v1.Container{{Name: "c", SecurityContext: tc.c}}}}
			if tc.spec != nil {
				tc.spec(&pod.Spec)
			}
			tc.check(t, containerSecurity(pod, &pod.Spec.Containers[0]))
		})
	}
}

func TestContainerSecurityDoesNotAliasPodGroups(t *testing.T) {
	groups := make([]int64, 1, 4)
	groups[0] = 10
	pod := &v1.Pod{Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{SupplementalGroups: groups, FSGroup: ptrTo(int64(2000))},
		Containers:      []v1.Container{{Name: "c"}},
	}}
	containerSecurity(pod, &pod.Spec.Containers[0])
	if spare := groups[:2][1]; spare != 0 {
		t.Errorf("the pod's SupplementalGroups backing array was written: %v", groups[:2])
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	const (
		userMsg   = "container's runAsUser breaks non-root policy (pod: %q, container: %s)"
		rootMsg   = "container has runAsNonRoot and image will run as root (pod: %q, container: %s)"
		nonNumMsg = "container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)"
	)
	ourRef := "dapi_ns1(uid-9)" // upstream format.Pod: name_namespace(uid)
	cases := []struct {
		name  string
		pod   *v1.PodSecurityContext
		c     *v1.SecurityContext
		image *criv1.Image
		want  string
	}{
		{name: "not requested", image: &criv1.Image{Uid: &criv1.Int64Value{Value: 0}}},
		{name: "explicit non-root user", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(1000))},
			image: &criv1.Image{Uid: &criv1.Int64Value{Value: 0}}},
		{name: "explicit root user", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(0))},
			want: fmt.Sprintf(userMsg, ourRef, "c")},
		{name: "pod-level runAsNonRoot, image uid 0", pod: &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true)},
			image: &criv1.Image{Uid: &criv1.Int64Value{Value: 0}}, want: fmt.Sprintf(rootMsg, ourRef, "c")},
		{name: "image uid non-zero", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)},
			image: &criv1.Image{Uid: &criv1.Int64Value{Value: 1234}}},
		{name: "image with no user runs as root", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)},
			image: &criv1.Image{}, want: fmt.Sprintf(rootMsg, ourRef, "c")},
		{name: "image with a user name", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)},
			image: &criv1.Image{Username: "nobody"}, want: fmt.Sprintf(nonNumMsg, "nobody", ourRef, "c")},
		{name: "container overrides pod runAsNonRoot", pod: &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true)},
			c: &v1.SecurityContext{RunAsNonRoot: ptrTo(false)}, image: &criv1.Image{}},
		{name: "container user overrides pod root user",
			pod: &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(0))},
			c:   &v1.SecurityContext{RunAsUser: ptrTo(int64(7))}},
		{name: "pod root user", pod: &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(0))},
			want: fmt.Sprintf(userMsg, ourRef, "c")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := envPod()
			pod.Spec.SecurityContext = tc.pod
			c := &v1.Container{Name: "c", SecurityContext: tc.c}
			err := VerifyRunAsNonRoot(pod, c, tc.image)
			if tc.want == "" {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || err.Error() != tc.want {
				t.Errorf("err = %v, want configError %q", err, tc.want)
			}
		})
	}
	t.Run("pod reference format", func(t *testing.T) {
		pod := envPod()
		c := &v1.Container{Name: "c", SecurityContext: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(0))}}
		if err := VerifyRunAsNonRoot(pod, c, nil); err == nil || err.Error() != fmt.Sprintf(userMsg, "dapi_ns1(uid-9)", "c") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestOOMScoreAdj(t *testing.T) {
	mi := int64(1 << 20)
	pod := func(req, lim string) *v1.Pod {
		c := v1.Container{Name: "c"}
		if req != "" {
			c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(req)}
		}
		if lim != "" {
			c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(lim), v1.ResourceCPU: resource.MustParse("1")}
			c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(lim), v1.ResourceCPU: resource.MustParse("1")}
		}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	}
	nodeCritical := func(p *v1.Pod, priority int32) *v1.Pod {
		p.Spec.PriorityClassName, p.Spec.Priority = "system-node-critical", &priority
		return p
	}
	static := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		return p
	}
	cases := []struct {
		name string
		pod  *v1.Pod
		cap  int64
		want int64
	}{
		{"best effort", pod("", ""), 1000 * mi, 1000},
		{"guaranteed", pod("", "100Mi"), 1000 * mi, -997},
		{"burstable 10% of memory", pod("100Mi", ""), 1000 * mi, 900},
		{"burstable all memory stays above guaranteed", pod("1000Mi", ""), 1000 * mi, 3},
		{"burstable tiny request stays below best effort", pod("1", ""), 1000 * mi, 999},
		{"capacity unknown", pod("100Mi", ""), 0, 999},
		{"node-critical best effort is spared as guaranteed", nodeCritical(pod("", ""), 2_000_001_000), 1000 * mi, -997},
		{"node-critical burstable", nodeCritical(pod("100Mi", ""), 2_000_001_000), 1000 * mi, -997},
		{"node-critical class below the critical priority", nodeCritical(pod("", ""), 1000), 1000 * mi, 1000},
		{"node-critical class on a static pod", static(nodeCritical(pod("", ""), 0)), 1000 * mi, -997},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := oomScoreAdj(tc.pod, &tc.pod.Spec.Containers[0], tc.cap); got != tc.want {
				t.Errorf("oomScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
}

// Upstream's policy.go: a pod-level memory request beyond the
// containers' is shared out among them; a sidecar is killed no later than
// the app container that requests least.
func TestOOMScoreAdjPodLevelAndSidecars(t *testing.T) {
	mem := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}}
	}
	always := v1.ContainerRestartPolicyAlways
	capacity := int64(1000 << 20)
	podLevel := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("400Mi")}},
		Containers: []v1.Container{{Name: "a", Resources: mem("100Mi")}, {Name: "b"}},
	}}
	sidecar := func(q string) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "s", RestartPolicy: &always, Resources: mem(q)}},
			Containers:     []v1.Container{{Name: "a", Resources: mem("200Mi")}},
		}}
	}
	cases := []struct {
		name string
		pod  *v1.Pod
		c    *v1.Container
		want int64
	}{
		{"pod-level: the container's request plus its share", podLevel, &podLevel.Spec.Containers[0], 750},
		{"pod-level: a container without a request gets its share", podLevel, &podLevel.Spec.Containers[1], 850},
		{"sidecar requesting less than the app", sidecar("50Mi"), nil, 800},
		{"sidecar requesting more than the app", sidecar("300Mi"), nil, 700},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if c == nil {
				c = &tc.pod.Spec.InitContainers[0]
			}
			if got := oomScoreAdj(tc.pod, c, capacity); got != tc.want {
				t.Errorf("oomScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
}

type containerFieldCase struct {
	name  string
	c     func(*v1.Container)
	pod   func(*v1.Pod)
	in    func(*ContainerInputs)
	field func(*criv1.ContainerConfig) any
	want  any
}

// TestContainerConfigFields covers each field ContainerConfig sets, one
// case a field, through the API the worker calls. The label and
// annotation keys are spelled out: crictl and a restarted agent read them.
func TestContainerConfigFields(t *testing.T) {
	cases := append(containerSpecCases(), containerLinuxCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1] // "side": no resources
			in := ContainerInputs{ImageRef: "sha256:abc"}
			if tc.pod != nil {
				tc.pod(pod)
			}
			if tc.c != nil {
				tc.c(c)
			}
			if tc.in != nil {
				tc.in(&in)
			}
			cfg, err := ContainerConfig(pod, c, envNode, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.field(cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func containerSpecCases() []containerFieldCase {
	sideHash := runtime.HashContainer(&envPod().Spec.Containers[1])
	return []containerFieldCase{
		{name: "metadata carries the restart count", in: func(in *ContainerInputs) { in.RestartCount = 4 },
			field: func(c *criv1.ContainerConfig) any { return c.Metadata },
			want:  &criv1.ContainerMetadata{Name: "side", Attempt: 4}},
		{name: "image: the resolved reference and the spec's",
			field: func(c *criv1.ContainerConfig) any { return c.Image },
			want:  &criv1.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1"}},
		{name: "command and args expand env references",
			c: func(c *v1.Container) {
				c.Env = []v1.EnvVar{{Name: "X", Value: "x"}}
				c.Command, c.Args = []string{"run", "$(X)"}, []string{"--x=$(X)", "$$(X)"}
			},
			field: func(c *criv1.ContainerConfig) any { return [][]string{c.Command, c.Args} },
			want:  [][]string{{"run", "x"}, {"--x=x", "$(X)"}}},
		{name: "working dir", c: func(c *v1.Container) { c.WorkingDir = "/srv" },
			field: func(c *criv1.ContainerConfig) any { return c.WorkingDir },
			want:  "/srv"},
		{name: "envs in order",
			c:     func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "B", Value: "1"}, fieldEnv("A", "spec.nodeName")} },
			field: func(c *criv1.ContainerConfig) any { return c.Envs },
			want:  []*criv1.KeyValue{{Key: "B", Value: []byte("1")}, {Key: "A", Value: []byte("node1")}}},
		{name: "labels",
			field: func(c *criv1.ContainerConfig) any { return c.Labels },
			want: map[string]string{"io.kubernetes.pod.name": "dapi", "io.kubernetes.pod.namespace": "ns1",
				"io.kubernetes.pod.uid": "uid-9", "io.kubernetes.container.name": "side"}},
		{name: "annotations", in: func(in *ContainerInputs) { in.RestartCount = 1 },
			field: func(c *criv1.ContainerConfig) any { return c.Annotations },
			want: map[string]string{"io.kubernetes.container.hash": sideHash, "io.kubernetes.container.restartCount": "1",
				"io.kubernetes.container.terminationMessagePath": "", "io.kubernetes.container.terminationMessagePolicy": ""}},
		{name: "log path", in: func(in *ContainerInputs) { in.RestartCount = 3 },
			field: func(c *criv1.ContainerConfig) any { return c.LogPath },
			want:  "side/3.log"},
		{name: "stdin, stdinOnce, tty", c: func(c *v1.Container) { c.Stdin, c.StdinOnce, c.TTY = true, true, true },
			field: func(c *criv1.ContainerConfig) any { return []bool{c.Stdin, c.StdinOnce, c.Tty} },
			want:  []bool{true, true, true}},
		{name: "mounts: volume with propagation, then /etc/hosts",
			c: func(c *v1.Container) {
				c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", MountPropagation: ptrTo(v1.MountPropagationHostToContainer)}}
			},
			in: func(in *ContainerInputs) {
				in.Volumes = map[string]volume.Mounted{"data": {HostPath: "/v/data", ReadOnly: true}}
				in.EtcHostsPath = "/p/etc-hosts"
			},
			field: func(c *criv1.ContainerConfig) any { return c.Mounts },
			want: []*criv1.Mount{
				{ContainerPath: "/data", HostPath: "/v/data", Readonly: true, Propagation: criv1.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
				{ContainerPath: "/etc/hosts", HostPath: "/p/etc-hosts", SelinuxRelabel: true},
			}},
		{name: "mounts: a volume the kubelet relabels, a host path it does not",
			c: func(c *v1.Container) {
				c.VolumeMounts = []v1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "host", MountPath: "/host"}}
			},
			in: func(in *ContainerInputs) {
				in.Volumes = map[string]volume.Mounted{"cache": {HostPath: "/v/cache", SELinuxRelabel: true}, "host": {HostPath: "/srv"}}
			},
			field: func(c *criv1.ContainerConfig) any { return c.Mounts },
			want: []*criv1.Mount{
				{ContainerPath: "/cache", HostPath: "/v/cache", SelinuxRelabel: true},
				{ContainerPath: "/host", HostPath: "/srv"},
			}},
	}
}

func containerLinuxCases() []containerFieldCase {
	return []containerFieldCase{
		{name: "resources: limits, shares, quota",
			c: func(c *v1.Container) {
				c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
			},
			field: func(c *criv1.ContainerConfig) any {
				r := c.Linux.Resources
				return []int64{r.CpuShares, r.CpuPeriod, r.CpuQuota, r.MemoryLimitInBytes}
			},
			want: []int64{2, 100000, 200000, 1 << 30}},
		{name: "OOM score relative to the node's allocatable memory",
			c: func(c *v1.Container) {
				c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}
			},
			field: func(c *criv1.ContainerConfig) any { return c.Linux.Resources.OomScoreAdj },
			want:  int64(750)},
		{name: "security: user, group, supplemental groups with fsGroup",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptrTo(int64(1)), RunAsGroup: ptrTo(int64(2)),
					SupplementalGroups: []int64{3}, FSGroup: ptrTo(int64(4))}
			},
			field: func(c *criv1.ContainerConfig) any {
				sc := c.Linux.SecurityContext
				return []any{sc.RunAsUser.GetValue(), sc.RunAsGroup.GetValue(), sc.SupplementalGroups}
			},
			want: []any{int64(1), int64(2), []int64{3, 4}}},
		{name: "security: privileged, capabilities, read-only rootfs, no new privileges",
			c: func(c *v1.Container) {
				c.SecurityContext = &v1.SecurityContext{Privileged: ptrTo(true), ReadOnlyRootFilesystem: ptrTo(true),
					AllowPrivilegeEscalation: ptrTo(false), Capabilities: &v1.Capabilities{Add: []v1.Capability{"SYS_TIME"}}}
			},
			field: func(c *criv1.ContainerConfig) any {
				sc := c.Linux.SecurityContext
				return []any{sc.Privileged, sc.Capabilities, sc.ReadonlyRootfs, sc.NoNewPrivs, sc.MaskedPaths, sc.ReadonlyPaths}
			},
			want: []any{true, &criv1.Capability{AddCapabilities: []string{"SYS_TIME"}, DropCapabilities: []string{}},
				true, true, []string(nil), []string(nil)}},
		{name: "security: masked and read-only paths by default",
			field: func(c *criv1.ContainerConfig) any {
				return [][]string{c.Linux.SecurityContext.MaskedPaths, c.Linux.SecurityContext.ReadonlyPaths}
			},
			want: [][]string{defaultMaskedPaths, defaultReadonlyPaths}},
		{name: "namespaces: an ephemeral container's PID target",
			in:    func(in *ContainerInputs) { in.PidTarget = "id-main" },
			field: func(c *criv1.ContainerConfig) any { return c.Linux.SecurityContext.NamespaceOptions },
			want: &criv1.NamespaceOption{Network: criv1.NamespaceMode_POD, Pid: criv1.NamespaceMode_TARGET,
				Ipc: criv1.NamespaceMode_POD, TargetId: "id-main", UsernsOptions: nodeUserns()}},
		{name: "namespaces: hostUsers false, the sandbox's user namespace",
			pod:   func(p *v1.Pod) { p.Spec.HostUsers = ptrTo(false) },
			in:    func(in *ContainerInputs) { in.UserNamespace = podUserns(65536 * 7) },
			field: func(c *criv1.ContainerConfig) any { return c.Linux.SecurityContext.NamespaceOptions.UsernsOptions },
			want:  podUserns(65536 * 7)},
	}
}

// volumeDevices fail the container as the kubelet fails a volume without a
// block volume mapper: the agent maps none.
func TestContainerConfigVolumeDevicesRefused(t *testing.T) {
	for path, want := range map[string]string{
		"/dev/xvda": `cannot find volume "disk" to pass into container "c"`,
		"dev/xvda":  "error DevicePath `dev/xvda` must be an absolute path",
	} {
		pod := &v1.Pod{}
		c := &v1.Container{Name: "c", Image: "i", VolumeDevices: []v1.VolumeDevice{{Name: "disk", DevicePath: path}}}
		_, err := ContainerConfig(pod, c, Node{}, ContainerInputs{})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Msg != want {
			t.Errorf("device path %s: err %v, want the ConfigError %q", path, err, want)
		}
	}
}
