package e2e

import (
	"fmt"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// runToEnd runs a restartPolicy Never pod with one busybox container "c"
// (spec holds its other pod fields, container is the rest of "c", both
// YAML at their indentation) and returns the pod once it has finished.
func runToEnd(t *testing.T, name, spec, container string) *v1.Pod {
	t.Helper()
	return runToEndOn(t, newAgent(t), name, spec, container)
}

// runToEndOn is runToEnd on the given agent.
func runToEndOn(t *testing.T, a *framework.Agent, name, spec, container string) *v1.Pod {
	t.Helper()
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  restartPolicy: Never\n%s  containers:\n  - name: c\n    image: %s\n%s",
		name, spec, framework.BusyboxImage, container)
	if err := a.WriteManifest(name+".yaml", manifest); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod(name, podTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A failed container's last output without a newline is a partial CRI log
// entry; the kubelet's FallbackToLogsOnError message still includes it.
func TestFallbackToLogsReadsPartialLastLine(t *testing.T) {
	p := runToEnd(t, "partial", "", `    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "printf DONE; exit 1"]
`)
	if term := status(t, p, "c").State.Terminated; term == nil || term.ExitCode != 1 || term.Message != "DONE" {
		t.Errorf("termination %+v, want exit code 1 and message %q", term, "DONE")
	}
}

// A hostNetwork pod's addresses are the node's: in its status and in the
// downward API environment (the kubelet's podIPs of such a pod are the
// node's IPs).
func TestHostNetworkDownwardAPIAddresses(t *testing.T) {
	p := runToEnd(t, "hostnet-env", "  hostNetwork: true\n", `    command: ["sh", "-c", 'printf "%s %s %s %s" "$POD_IP" "$HOST_IP" "$POD_IPS" "$HOST_IPS" > /dev/termination-log; [ -n "$POD_IP" ] && [ -n "$POD_IPS" ] || exit 2']
    env:
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
`)
	node := p.Status.HostIP
	if node == "" {
		t.Fatal("no status.hostIP")
	}
	term := status(t, p, "c").State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Errorf("container terminated %+v, want exit code 0", term)
	}
	if want := fmt.Sprintf("%[1]s %[1]s %[1]s %[1]s", node); term == nil || term.Message != want {
		t.Errorf("POD_IP HOST_IP POD_IPS HOST_IPS: termination %+v, want message %q", term, want)
	}
	if p.Status.PodIP != node || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != node {
		t.Errorf("status podIP %q podIPs %v, want the node's %s", p.Status.PodIP, p.Status.PodIPs, node)
	}
}

// A hostNetwork pod's /etc/hosts is the kubelet's managed file too: the
// node's hosts file, then the pod's host aliases.
func TestHostNetworkPodHostsFileHasHostAliases(t *testing.T) {
	node, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	p := runToEnd(t, "hostnet-hosts", `  hostNetwork: true
  hostAliases:
  - {ip: 10.9.9.9, hostnames: [foo.example, bar.example]}
`, `    command: ["sh", "-c", "cat /etc/hosts > /dev/termination-log"]
`)
	want := "# Kubernetes-managed hosts file (host network).\n" + string(node) +
		"\n# Entries added by HostAliases.\n10.9.9.9\tfoo.example\tbar.example\n"
	if term := status(t, p, "c").State.Terminated; term == nil || term.ExitCode != 0 || term.Message != want {
		t.Errorf("the pod's /etc/hosts:\n%+v\nwant exit code 0 and message %q", term, want)
	}
}
