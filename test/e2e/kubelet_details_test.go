package e2e

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// A failed container's last output without a newline is a partial CRI log
// entry; the kubelet's FallbackToLogsOnError message still includes it.
func TestFallbackToLogsReadsPartialLastLine(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("partial.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: partial}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "printf DONE; exit 1"]
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("partial", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	if term := status(t, p, "c").State.Terminated; term == nil || term.Message != "DONE" {
		t.Errorf("termination %+v, want message %q", term, "DONE")
	}
}

// A hostNetwork pod's addresses are the node's: in its status and in the
// downward API environment (the kubelet's podIPs of such a pod are the
// node's IPs).
func TestHostNetworkDownwardAPIAddresses(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("hostnet-env.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hostnet-env}
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", 'printf "%%s %%s %%s %%s" "$POD_IP" "$HOST_IP" "$POD_IPS" "$HOST_IPS" > /dev/termination-log; [ -n "$POD_IP" ] && [ -n "$POD_IPS" ] || exit 2']
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("hostnet-env", podTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	if err != nil {
		t.Fatal(err)
	}
	node := p.Status.HostIP
	if node == "" {
		t.Fatal("no status.hostIP")
	}
	term := status(t, p, "c").State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Errorf("container terminated %+v, want exit code 0", term)
	}
	if want := fmt.Sprintf("%[1]s %[1]s %[1]s %[1]s", node); term == nil || term.Message != want {
		t.Errorf("POD_IP HOST_IP POD_IPS HOST_IPS = %q, want %q", term.Message, want)
	}
	if p.Status.PodIP != node || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != node {
		t.Errorf("status podIP %q podIPs %v, want the node's %s", p.Status.PodIP, p.Status.PodIPs, node)
	}
}
