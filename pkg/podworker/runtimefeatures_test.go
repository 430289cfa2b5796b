package podworker

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func TestFeaturesFromStatus(t *testing.T) {
	old := FeaturesFromStatus(&criv1.StatusResponse{}) // containerd 1.6: nothing announced
	if old.SupplementalGroupsPolicy || len(old.UserNamespaces) != 0 {
		t.Errorf("old runtime: %+v, want nothing", old)
	}
	f := FeaturesFromStatus(&criv1.StatusResponse{
		Features: &criv1.RuntimeFeatures{SupplementalGroupsPolicy: true},
		RuntimeHandlers: []*criv1.RuntimeHandler{
			{Name: "", Features: &criv1.RuntimeHandlerFeatures{UserNamespaces: true}},
			{Name: "crun"},
		},
	})
	if !f.SupplementalGroupsPolicy || !f.UserNamespaces[""] || f.UserNamespaces["crun"] || len(f.UserNamespaces) != 2 {
		t.Errorf("features = %+v", f)
	}
}

// The kubelet's supplementalGroupsPolicy admission check and message.
func TestCheckSupplementalGroupsPolicy(t *testing.T) {
	strict, merge := v1.SupplementalGroupsPolicyStrict, v1.SupplementalGroupsPolicyMerge
	for _, tc := range []struct {
		name      string
		psc       *v1.PodSecurityContext
		supported bool
		admit     bool
	}{
		{"no security context", nil, false, true},
		{"policy unset", &v1.PodSecurityContext{}, false, true},
		{"Merge without support", &v1.PodSecurityContext{SupplementalGroupsPolicy: &merge}, false, true},
		{"Strict without support", &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}, false, false},
		{"Strict with support", &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tc.psc}}
			r, ok := checkSupplementalGroupsPolicy(pod, tc.supported)
			if ok != tc.admit {
				t.Fatalf("admit = %v, want %v", ok, tc.admit)
			}
			if !ok && (r.Reason != "SupplementalGroupsPolicyNotSupported" || r.Message != "SupplementalGroupsPolicy=Strict is not supported in this node") {
				t.Errorf("rejection = %+v", r)
			}
		})
	}
}

// hostUsers: false never gets a sandbox without the runtime's support,
// with the kubelet's errors; with it, the pod gets its mappings
// (TestUserNamespaceMappings).
func TestUserNamespaceError(t *testing.T) {
	no, yes := false, true
	withUserns := RuntimeFeatures{UserNamespaces: map[string]bool{"": true, "runc": false}}
	for _, tc := range []struct {
		name      string
		hostUsers *bool
		handler   string
		f         RuntimeFeatures
		want      string // "" for no error
	}{
		{"hostUsers unset", nil, "", RuntimeFeatures{}, ""},
		{"hostUsers true", &yes, "", RuntimeFeatures{}, ""},
		{"containerd 1.6: no handlers reported", &no, "", RuntimeFeatures{}, "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"handler not reported", &no, "crun", withUserns, "can't set `spec.hostUsers: false`, RuntimeClass handler \"crun\" does not support user namespaces: the handler \"crun\" is not known"},
		{"handler without support", &no, "runc", withUserns, "can't set `spec.hostUsers: false`, RuntimeClass handler \"runc\" does not support user namespaces"},
		{"handler with support: the pod gets mappings", &no, "", withUserns, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := userNamespaceError(&v1.Pod{Spec: v1.PodSpec{HostUsers: tc.hostUsers}}, tc.handler, tc.f)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// On a runtime that announces nothing (the fake, as containerd 1.6), a
// Strict pod is rejected at admission and a hostUsers: false pod gets no
// sandbox, with the kubelet's events.
func TestManagerRefusesWithoutRuntimeFeatures(t *testing.T) {
	ev := &reasonEvents{}
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.events = ev
	h.start(t)
	strict := scenarioPod("strict", "busybox:1")
	policy := v1.SupplementalGroupsPolicyStrict
	strict.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
	userns := scenarioPod("userns", "busybox:1")
	hostUsers := false
	userns.Spec.HostUsers = &hostUsers
	h.pods <- []*v1.Pod{strict, userns}

	p := waitPhase(t, h, strict.UID, v1.PodFailed)
	if p.Status.Reason != "SupplementalGroupsPolicyNotSupported" || p.Status.Message != "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node" {
		t.Errorf("strict status = %s %q", p.Status.Reason, p.Status.Message)
	}
	const sandboxEvent = "FailedCreatePodSandBox: Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	eventually(t, "the sandbox refusal event", func() (bool, string) { return ev.has(sandboxEvent) })
	h.rt.Lock()
	defer h.rt.Unlock()
	if len(h.rt.Sandboxes) != 0 {
		t.Errorf("sandboxes created: %d, want none", len(h.rt.Sandboxes))
	}
}

// The container's user is reported only as the runtime reports it.
func TestContainerUser(t *testing.T) {
	if containerUser(nil) != nil {
		t.Error("no user from the runtime: want none reported")
	}
	got := containerUser(&criv1.ContainerUser{Linux: &criv1.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}})
	if l := got.Linux; l == nil || l.UID != 1000 || l.GID != 3000 || len(l.SupplementalGroups) != 2 || l.SupplementalGroups[1] != 4000 {
		t.Errorf("user = %+v", got)
	}
}
