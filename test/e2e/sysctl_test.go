package e2e

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// sysctlPod is a static pod setting one sysctl whose container prints
// what it reads back from /proc/sys.
func sysctlPod(name, sysctl, value, procPath string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s}
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    sysctls: [{name: %[2]s, value: %[3]q}]
  containers:
  - name: c
    image: %[4]s
    command: ["sh", "-c", "echo sysctl=$(cat /proc/sys/%[5]s); trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, sysctl, value, framework.BusyboxImage, procPath)
}

// A safe sysctl (one given with '/' separators, as the kubelet accepts)
// reaches the pod; an unsafe one not allowed is rejected at admission
// with the kubelet's reason and message, and nothing of it runs.
func TestSysctlsSafeAndForbidden(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("safe.yaml", sysctlPod("safe", "net/ipv4/ip_unprivileged_port_start", "0", "net/ipv4/ip_unprivileged_port_start")); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("unsafe.yaml", sysctlPod("unsafe", "net.core.somaxconn", "1234", "net/core/somaxconn")); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("safe", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitLog(t, a, p, "c", 0, "sysctl="); got != "sysctl=0" {
		t.Errorf("safe sysctl read back as %q, want sysctl=0", got)
	}
	rejected, err := a.WaitPod("unsafe", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	const wantMsg = `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted`
	if rejected.Status.Reason != "SysctlForbidden" || rejected.Status.Message != wantMsg {
		t.Errorf("unsafe pod status %s %q, want SysctlForbidden %q", rejected.Status.Reason, rejected.Status.Message, wantMsg)
	}
	if cs := containersOf(t, string(rejected.UID)); len(cs) != 0 {
		t.Errorf("containers created for the rejected pod: %d", len(cs))
	}
}

// allowedUnsafeSysctls with a wildcard lets the same pod run.
func TestSysctlsAllowedUnsafe(t *testing.T) {
	a := newAgentWith(t, "allowedUnsafeSysctls: [\"net.core.*\"]\n")
	if err := a.WriteManifest("unsafe.yaml", sysctlPod("unsafe", "net.core.somaxconn", "1234", "net/core/somaxconn")); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("unsafe", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitLog(t, a, p, "c", 0, "sysctl="); got != "sysctl=1234" {
		t.Errorf("unsafe sysctl read back as %q, want sysctl=1234", got)
	}
}
