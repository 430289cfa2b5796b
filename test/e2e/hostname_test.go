package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// hostnameAgentConfig gives the agent a cluster domain, so that a pod's
// FQDN is the kubelet's <hostname>.<subdomain>.<namespace>.svc.cluster.local.
const hostnameAgentConfig = "clusterDomain: cluster.local\n"

// setHostnameAsFQDN makes the kernel hostname the pod's FQDN: `hostname`
// inside the container prints it, and /etc/hosts still names the pod by
// its FQDN and its short name.
func TestSetHostnameAsFQDN(t *testing.T) {
	p := runToEndOn(t, newAgentWith(t, hostnameAgentConfig), "fqdn", `  hostname: h1
  subdomain: sub
  setHostnameAsFQDN: true
`, `    command: ["sh", "-c", 'printf "%s|%s" "$(hostname)" "$(grep h1 /etc/hosts | cut -f2-)" > /dev/termination-log']
`)
	fqdn := "h1.sub." + p.Namespace + ".svc.cluster.local"
	want := fqdn + "|" + fqdn + "\th1"
	if term := status(t, p, "c").State.Terminated; term == nil || term.ExitCode != 0 || term.Message != want {
		t.Errorf("hostname|hosts entry: %+v, want exit code 0 and message %q", term, want)
	}
}

// An FQDN longer than the kernel's 64 characters fails the sandbox with
// the kubelet's message; the pod stays Pending, its container waiting in
// ContainerCreating.
func TestSetHostnameAsFQDNTooLong(t *testing.T) {
	a := newAgentWith(t, hostnameAgentConfig)
	host := strings.Repeat("h", 35) // + ".sub.default.svc.cluster.local" (30): 65 characters
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: longfqdn}\nspec:\n  hostname: %s\n  subdomain: sub\n  setHostnameAsFQDN: true\n"+
		"  containers:\n  - {name: c, image: %s, command: [sleep, \"3600\"]}\n", host, framework.BusyboxImage)
	if err := a.WriteManifest("longfqdn.yaml", manifest); err != nil {
		t.Fatal(err)
	}
	fqdn := host + ".sub.default.svc.cluster.local"
	if err := a.WaitLog("Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN "+fqdn+
		" is too long (64 characters is the max, 65 characters requested)", podTimeout); err != nil {
		t.Fatal(err)
	}
	p, err := a.Pod("longfqdn")
	if err != nil {
		t.Fatal(err)
	}
	if w := status(t, p, "c").State.Waiting; p.Status.Phase != v1.PodPending || w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("pod %s, container %+v; want Pending and ContainerCreating", p.Status.Phase, status(t, p, "c").State)
	}
}

// hostnameOverride names the pod by itself: `hostname` prints it, whatever
// hostname and subdomain say, and /etc/hosts maps the pod's IP to it alone.
func TestHostnameOverride(t *testing.T) {
	p := runToEndOn(t, newAgentWith(t, hostnameAgentConfig), "override", `  hostname: h1
  subdomain: sub
  hostnameOverride: www.example.com
`, `    command: ["sh", "-c", 'printf "%s|%s" "$(hostname)" "$(tail -n 1 /etc/hosts)" > /dev/termination-log']
`)
	want := regexp.MustCompile(`^www\.example\.com\|[0-9.]+\twww\.example\.com$`)
	if term := status(t, p, "c").State.Terminated; term == nil || term.ExitCode != 0 || !want.MatchString(term.Message) {
		t.Errorf("hostname|last hosts entry: %+v, want exit code 0 and a message matching %s", term, want)
	}
}
