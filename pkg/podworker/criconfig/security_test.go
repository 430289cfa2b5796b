package criconfig

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func seccompOf(t v1.SeccompProfileType, localhost ...string) *v1.SeccompProfile {
	p := &v1.SeccompProfile{Type: t}
	if len(localhost) > 0 {
		p.LocalhostProfile = &localhost[0]
	}
	return p
}

func profileOf(t criv1.SecurityProfile_ProfileType, ref string) *criv1.SecurityProfile {
	return &criv1.SecurityProfile{ProfileType: t, LocalhostRef: ref}
}

var (
	runtimeDefault = profileOf(criv1.SecurityProfile_RuntimeDefault, "")
	unconfined     = profileOf(criv1.SecurityProfile_Unconfined, "")
)

// containerSecurityOf is the security context of the pod's first
// container's CRI config; nil, after checking the error is a ConfigError,
// when wantErr.
func containerSecurityOf(t *testing.T, pod *v1.Pod, node Node, wantErr bool) *criv1.LinuxContainerSecurityContext {
	t.Helper()
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], node, ContainerInputs{})
	if wantErr {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a ConfigError", err)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Linux.SecurityContext
}

func TestSeccompProfile(t *testing.T) {
	const root = "/var/lib/nodeagent/seccomp"
	cases := []struct {
		name        string
		pod, c      *v1.SeccompProfile
		annotations map[string]string
		def         bool // seccompDefault
		want        *criv1.SecurityProfile
		wantErr     bool
	}{
		{name: "none: unconfined", want: unconfined},
		{name: "none with seccompDefault: runtime default", def: true, want: runtimeDefault},
		{name: "pod runtime default", pod: seccompOf(v1.SeccompProfileTypeRuntimeDefault), want: runtimeDefault},
		{name: "pod unconfined", pod: seccompOf(v1.SeccompProfileTypeUnconfined), want: unconfined},
		{name: "pod unconfined beats seccompDefault", pod: seccompOf(v1.SeccompProfileTypeUnconfined), def: true, want: unconfined},
		{name: "pod localhost under the seccomp root", pod: seccompOf(v1.SeccompProfileTypeLocalhost, "profiles/audit.json"),
			want: profileOf(criv1.SecurityProfile_Localhost, root+"/profiles/audit.json")},
		{name: "container runtime default", c: seccompOf(v1.SeccompProfileTypeRuntimeDefault), want: runtimeDefault},
		{name: "container overrides pod", pod: seccompOf(v1.SeccompProfileTypeRuntimeDefault), c: seccompOf(v1.SeccompProfileTypeUnconfined), want: unconfined},
		{name: "container localhost overrides pod", pod: seccompOf(v1.SeccompProfileTypeUnconfined), c: seccompOf(v1.SeccompProfileTypeLocalhost, "a.json"),
			want: profileOf(criv1.SecurityProfile_Localhost, root+"/a.json")},
		{name: "container unconfined beats seccompDefault", c: seccompOf(v1.SeccompProfileTypeUnconfined), def: true, want: unconfined},
		{name: "localhost without a name", c: seccompOf(v1.SeccompProfileTypeLocalhost), wantErr: true},
		{name: "localhost with an empty name", pod: seccompOf(v1.SeccompProfileTypeLocalhost, ""), wantErr: true},
		{name: "the removed annotations are not read", annotations: map[string]string{
			"seccomp.security.alpha.kubernetes.io/pod":         "runtime/default",
			"container.seccomp.security.alpha.kubernetes.io/c": "runtime/default",
		}, want: unconfined},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
			pod.Annotations = tc.annotations
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.pod}
			}
			if tc.c != nil {
				pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: tc.c}
			}
			sc := containerSecurityOf(t, pod, Node{SeccompProfileRoot: root, SeccompDefault: tc.def}, tc.wantErr)
			if sc == nil {
				return
			}
			if got := sc.Seccomp; !proto.Equal(got, tc.want) {
				t.Errorf("seccomp = %v, want %v", got, tc.want)
			}
			if p := sc.SeccompProfilePath; p != "" {
				t.Errorf("the deprecated seccompProfilePath is set: %q", p)
			}
		})
	}
}

// The sandbox always runs RuntimeDefault, whatever the pod asks for, as
// the kubelet forces it.
func TestSandboxSeccomp(t *testing.T) {
	for _, p := range []*v1.SeccompProfile{nil, seccompOf(v1.SeccompProfileTypeUnconfined), seccompOf(v1.SeccompProfileTypeLocalhost, "a.json")} {
		pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SeccompProfile: p}}}
		if got := buildSandboxConfig(pod, sandboxInputs{}).Linux.SecurityContext.Seccomp; !proto.Equal(got, runtimeDefault) {
			t.Errorf("pod profile %v: sandbox seccomp = %v", p, got)
		}
	}
}

func TestAppArmorProfile(t *testing.T) {
	const annotation = v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c"
	aa := func(t v1.AppArmorProfileType, localhost ...string) *v1.AppArmorProfile {
		p := &v1.AppArmorProfile{Type: t}
		if len(localhost) > 0 {
			p.LocalhostProfile = &localhost[0]
		}
		return p
	}
	cases := []struct {
		name       string
		pod, c     *v1.AppArmorProfile
		annotation string
		want       *criv1.SecurityProfile
		wantOld    string // the deprecated ApparmorProfile string
		wantErr    bool
	}{
		{name: "none: nothing sent"},
		{name: "pod runtime default", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), want: runtimeDefault, wantOld: "runtime/default"},
		{name: "pod unconfined", pod: aa(v1.AppArmorProfileTypeUnconfined), want: unconfined, wantOld: "unconfined"},
		{name: "pod localhost", pod: aa(v1.AppArmorProfileTypeLocalhost, "k8s-deny-write"),
			want: profileOf(criv1.SecurityProfile_Localhost, "k8s-deny-write"), wantOld: "localhost/k8s-deny-write"},
		{name: "container overrides pod", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), c: aa(v1.AppArmorProfileTypeUnconfined),
			want: unconfined, wantOld: "unconfined"},
		{name: "annotation overrides pod", pod: aa(v1.AppArmorProfileTypeUnconfined), annotation: "runtime/default",
			want: runtimeDefault, wantOld: "runtime/default"},
		{name: "container field overrides annotation", c: aa(v1.AppArmorProfileTypeUnconfined), annotation: "runtime/default",
			want: unconfined, wantOld: "unconfined"},
		{name: "annotation localhost", annotation: "localhost/p1", want: profileOf(criv1.SecurityProfile_Localhost, "p1"), wantOld: "localhost/p1"},
		{name: "annotation unconfined", annotation: "unconfined", want: unconfined, wantOld: "unconfined"},
		{name: "invalid annotation falls back to the pod", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), annotation: "bogus",
			want: runtimeDefault, wantOld: "runtime/default"},
		{name: "localhost without a name", c: aa(v1.AppArmorProfileTypeLocalhost), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
			if tc.annotation != "" {
				pod.Annotations = map[string]string{annotation: tc.annotation}
			}
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: tc.pod}
			}
			if tc.c != nil {
				pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: tc.c}
			}
			sc := containerSecurityOf(t, pod, Node{}, tc.wantErr)
			if sc == nil {
				return
			}
			if !proto.Equal(sc.Apparmor, tc.want) || sc.ApparmorProfile != tc.wantOld {
				t.Errorf("apparmor = %v %q, want %v %q", sc.Apparmor, sc.ApparmorProfile, tc.want, tc.wantOld)
			}
		})
	}
}

func TestSELinuxOptions(t *testing.T) {
	podOpts := &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}
	cOpts := &v1.SELinuxOptions{Type: "spc_t"}
	cases := []struct {
		name          string
		pod, c        *v1.SELinuxOptions
		want, sandbox *criv1.SELinuxOption
	}{
		{name: "none"},
		{name: "pod options for sandbox and container", pod: podOpts,
			want:    &criv1.SELinuxOption{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"},
			sandbox: &criv1.SELinuxOption{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}},
		{name: "container options replace the pod's whole", pod: podOpts, c: cOpts,
			want:    &criv1.SELinuxOption{Type: "spc_t"},
			sandbox: &criv1.SELinuxOption{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}},
		{name: "container options only: not on the sandbox", c: cOpts, want: &criv1.SELinuxOption{Type: "spc_t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: tc.pod}
			}
			if tc.c != nil {
				pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: tc.c}
			}
			cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], Node{}, ContainerInputs{})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Linux.SecurityContext.SelinuxOptions; !proto.Equal(got, tc.want) {
				t.Errorf("container selinux = %v, want %v", got, tc.want)
			}
			if got := buildSandboxConfig(pod, sandboxInputs{}).Linux.SecurityContext.SelinuxOptions; !proto.Equal(got, tc.sandbox) {
				t.Errorf("sandbox selinux = %v, want %v", got, tc.sandbox)
			}
		})
	}
}
