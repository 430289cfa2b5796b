package podworker

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func appArmorPod(mutate func(*v1.Pod)) *v1.Pod {
	p := reqPod("aa", "", "")
	p.Status.Phase = v1.PodPending
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1"}}
	mutate(p)
	return p
}

func TestCheckAppArmor(t *testing.T) {
	const disabledMsg = "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	disabled := appArmorHostError(func() bool { return false })
	enabled := appArmorHostError(func() bool { return true })
	profile := func(t v1.AppArmorProfileType, name ...string) *v1.AppArmorProfile {
		p := &v1.AppArmorProfile{Type: t}
		if len(name) > 0 {
			p.LocalhostProfile = &name[0]
		}
		return p
	}
	podProfile := func(p *v1.AppArmorProfile) func(*v1.Pod) {
		return func(pod *v1.Pod) { pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: p} }
	}
	cases := []struct {
		name    string
		mutate  func(*v1.Pod)
		hostErr error
		msg     string // "" admits; a prefix of the rejection message otherwise
	}{
		{name: "no profile on a disabled host", mutate: func(*v1.Pod) {}, hostErr: disabled},
		{name: "pod unconfined on a disabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeUnconfined)), hostErr: disabled},
		{name: "pod runtime default on a disabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeRuntimeDefault)), hostErr: disabled, msg: disabledMsg},
		{name: "pod localhost on a disabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeLocalhost, "p")), hostErr: disabled, msg: disabledMsg},
		{name: "init container runtime default on a disabled host", hostErr: disabled, msg: disabledMsg, mutate: func(p *v1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeRuntimeDefault)}
		}},
		{name: "container unconfined on a disabled host", hostErr: disabled, mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeUnconfined)}
		}},
		{name: "annotation runtime/default on a disabled host", hostErr: disabled, msg: disabledMsg, mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}
		}},
		{name: "annotation unconfined on a disabled host", hostErr: disabled, mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "unconfined"}
		}},
		{name: "a running pod is not checked again", hostErr: disabled, mutate: func(p *v1.Pod) {
			podProfile(profile(v1.AppArmorProfileTypeRuntimeDefault))(p)
			p.Status.Phase = v1.PodRunning
		}},
		{name: "runtime default on an enabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeRuntimeDefault)), hostErr: enabled},
		{name: "localhost on an enabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeLocalhost, "p")), hostErr: enabled},
		{name: "blank localhost name on an enabled host", mutate: podProfile(profile(v1.AppArmorProfileTypeLocalhost, " ")), hostErr: enabled,
			msg: "Cannot enforce AppArmor: invalid empty AppArmor profile name: "},
		{name: "empty localhost annotation on an enabled host", hostErr: enabled, msg: "Cannot enforce AppArmor: invalid empty AppArmor profile name: ",
			mutate: func(p *v1.Pod) {
				p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/"}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := checkAppArmor(appArmorPod(tc.mutate), tc.hostErr)
			if tc.msg == "" {
				if !r.Admit {
					t.Errorf("rejected: %+v", r)
				}
				return
			}
			if r.Admit || r.Reason != "AppArmor" || !strings.HasPrefix(r.Message, tc.msg) {
				t.Errorf("got %+v, want reason AppArmor, message %q...", r, tc.msg)
			}
		})
	}
	if err := appArmorHostError(func() bool { return false }); err == nil || err.Error() != "AppArmor is not enabled on the host" {
		t.Errorf("host error = %v", err)
	}
	if err := appArmorHostError(func() bool { return true }); err != nil {
		t.Errorf("enabled host: %v", err)
	}
}

// A pod asking for an AppArmor profile on a node without AppArmor is
// rejected at admission with the kubelet's reason and message, static
// pods too; an Unconfined one runs.
func TestManagerRejectsAppArmorWithoutAppArmor(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	h.m.appArmorErr = appArmorHostError(func() bool { return false })
	statuses := &statusLog{}
	h.m.cfg.OnStatus = statuses.record
	h.start(t)

	confined := scenarioPod("confined", "busybox:1")
	confined.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	confined.Status.Phase = v1.PodPending
	confined.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	free := scenarioPod("free", "busybox:1")
	free.Status.Phase = v1.PodPending
	free.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
	h.pods <- []*v1.Pod{confined, free}
	eventually(t, "free running", func() (bool, string) { return allRunning(h.pod(free.UID)) })
	p := waitPhase(t, h, confined.UID, v1.PodFailed)
	const wantMsg = "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"
	if p.Status.Reason != "AppArmor" || p.Status.Message != wantMsg {
		t.Errorf("status = %s %q, want AppArmor %q", p.Status.Reason, p.Status.Message, wantMsg)
	}
	h.rt.Lock()
	defer h.rt.Unlock()
	for _, sb := range h.rt.Sandboxes {
		if sb.Metadata.Uid == string(confined.UID) {
			t.Errorf("sandbox created for the rejected pod: %s", sb.Id)
		}
	}
}

// The injected check decides: with AppArmor, a RuntimeDefault pod runs.
func TestManagerAdmitsAppArmorWithAppArmor(t *testing.T) {
	rt := critest.NewFakeRuntimeService()
	h := newManager(t, rt, critest.NewFakeImageService())
	m, err := New(Config{Runtime: rt, Images: h.img, NodeName: "node1", RootDir: h.rootDir, PodLogsDir: h.logsDir,
		Logger: quietLogger(), AppArmorEnabled: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if m.appArmorErr != nil {
		t.Fatalf("AppArmorEnabled ignored: %v", m.appArmorErr)
	}
	m2, _ := New(Config{Runtime: rt, Images: h.img, NodeName: "node1", AppArmorEnabled: func() bool { return false }})
	if m2.appArmorErr == nil {
		t.Fatal("AppArmorEnabled false: no host error")
	}
	h.m = m
	h.start(t)
	pod := scenarioPod("confined", "busybox:1")
	pod.Status.Phase = v1.PodPending
	pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
}
