package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// seccompScript prints the container's seccomp mode (0 none, 2 filter)
// and whether mkdir is allowed, which the Localhost profile below denies.
const seccompScript = "grep Seccomp: /proc/self/status; if mkdir /seccomp-probe; then echo mkdir=allowed; else echo mkdir=denied; fi"

// securityPodYAML is a run-once pod whose container's securityContext is
// the given YAML (indented under the container), or none.
func securityPodYAML(name, podSC, containerSC, script string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: e2e
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  securityContext: {%s}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
    securityContext: {%s}
`, name, podSC, framework.BusyboxImage, script, containerSC)
}

// runOnce writes the manifest and returns the container's log once the
// pod succeeded.
func runOnce(t *testing.T, a *framework.Agent, name, manifest string) string {
	t.Helper()
	if err := a.WriteManifest(name+".yaml", manifest); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod(name, podTimeout, phase(v1.PodSucceeded))
	if err != nil {
		t.Fatal(err)
	}
	return readLog(t, a, p, "c", 0)
}

func seccompMode(t *testing.T, log string) string {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		if rest, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no Seccomp: line in %q", log)
	return ""
}

// TestSeccompProfiles: the pod's and the container's seccompProfile reach
// the runtime, as the kubelet sends them: RuntimeDefault and Localhost
// (a file under <root-dir>/seccomp) install a filter, Unconfined none,
// and the container's profile wins over the pod's.
func TestSeccompProfiles(t *testing.T) {
	a := newAgent(t)
	dir := filepath.Join(a.RootDir, "seccomp", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(dir, "no-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, podSC, containerSC string
		mode, mkdir              string
	}{
		{name: "runtime-default", podSC: "seccompProfile: {type: RuntimeDefault}", mode: "2", mkdir: "allowed"},
		{name: "unconfined", podSC: "seccompProfile: {type: Unconfined}", mode: "0", mkdir: "allowed"},
		{name: "container-overrides", podSC: "seccompProfile: {type: RuntimeDefault}",
			containerSC: "seccompProfile: {type: Unconfined}", mode: "0", mkdir: "allowed"},
		{name: "localhost", containerSC: "seccompProfile: {type: Localhost, localhostProfile: e2e/no-mkdir.json}", mode: "2", mkdir: "denied"},
		{name: "none", mode: "0", mkdir: "allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := runOnce(t, a, "seccomp-"+tc.name, securityPodYAML("seccomp-"+tc.name, tc.podSC, tc.containerSC, seccompScript))
			if got := seccompMode(t, log); got != tc.mode {
				t.Errorf("Seccomp: %s, want %s (log %q)", got, tc.mode, log)
			}
			if !strings.Contains(log, "mkdir="+tc.mkdir) {
				t.Errorf("want mkdir=%s, log %q", tc.mkdir, log)
			}
		})
	}
}

// TestSeccompDefault: with seccompDefault a container that sets no profile
// runs RuntimeDefault; an explicit Unconfined still has none.
func TestSeccompDefault(t *testing.T) {
	a := newAgentWith(t, "seccompDefault: true\n")
	if got := seccompMode(t, runOnce(t, a, "seccomp-default", securityPodYAML("seccomp-default", "", "", seccompScript))); got != "2" {
		t.Errorf("no profile with seccompDefault: Seccomp: %s, want 2", got)
	}
	unconfined := securityPodYAML("seccomp-default-unconfined", "", "seccompProfile: {type: Unconfined}", seccompScript)
	if got := seccompMode(t, runOnce(t, a, "seccomp-default-unconfined", unconfined)); got != "0" {
		t.Errorf("Unconfined with seccompDefault: Seccomp: %s, want 0", got)
	}
}

// TestAppArmorWithoutAppArmor: these kernels have no AppArmor, so a pod
// that asks for a profile (field or annotation) is rejected at admission
// as the kubelet's AppArmor admit handler does, and never reaches the
// runtime; an Unconfined one runs.
func TestAppArmorWithoutAppArmor(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err == nil {
		t.Skip("AppArmor is enabled on this host")
	}
	a := newAgent(t)
	const wantMsg = "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"
	rejected := map[string]string{
		"apparmor-field": securityPodYAML("apparmor-field", "appArmorProfile: {type: RuntimeDefault}", "", "echo ran"),
		"apparmor-annotation": strings.Replace(securityPodYAML("apparmor-annotation", "", "", "echo ran"), "  namespace: e2e\n",
			"  namespace: e2e\n  annotations: {container.apparmor.security.beta.kubernetes.io/c: runtime/default}\n", 1),
	}
	for name, m := range rejected {
		if err := a.WriteManifest(name+".yaml", m); err != nil {
			t.Fatal(err)
		}
	}
	for name := range rejected {
		p, err := a.WaitPod(name, podTimeout, phase(v1.PodFailed))
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Reason != "AppArmor" || p.Status.Message != wantMsg {
			t.Errorf("%s: status %s %q, want AppArmor %q", name, p.Status.Reason, p.Status.Message, wantMsg)
		}
		if len(containersOf(t, string(p.UID))) != 0 {
			t.Errorf("%s: containers created for a rejected pod", name)
		}
	}
	if log := runOnce(t, a, "apparmor-unconfined", securityPodYAML("apparmor-unconfined", "appArmorProfile: {type: Unconfined}", "", "echo ran")); log != "ran" {
		t.Errorf("unconfined pod log %q", log)
	}
}

// TestSELinuxOptions: seLinuxOptions reach the runtime as the kubelet
// sends them: the pod's on the sandbox, the container's (replacing the
// pod's) on the container. These kernels have no SELinux: containerd
// checks the level's format and the pod runs.
func TestSELinuxOptions(t *testing.T) {
	a := newAgent(t)
	manifest := strings.Replace(securityPodYAML("selinux", `seLinuxOptions: {level: "s0:c1,c2"}`, "seLinuxOptions: {type: spc_t}", "exec sleep 3600"),
		"restartPolicy: Never", "restartPolicy: Always", 1)
	if err := a.WriteManifest("selinux.yaml", manifest); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("selinux", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := containersOf(t, string(p.UID))
	if len(cs) != 1 {
		t.Fatalf("containers: %v", cs)
	}
	st, err := cri.ContainerStatus(ctx, cs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	if info := st.Info["info"]; !strings.Contains(info, `"selinux_options":{"type":"spc_t"}`) {
		t.Errorf("container config lacks the container's seLinuxOptions: %s", info)
	}
	sb, err := cri.PodSandboxStatus(ctx, cs[0].PodSandboxId, true)
	if err != nil {
		t.Fatal(err)
	}
	if info := sb.Info["info"]; !strings.Contains(info, `"selinux_options":{"level":"s0:c1,c2"}`) {
		t.Errorf("sandbox config lacks the pod's seLinuxOptions: %s", info)
	}
}
