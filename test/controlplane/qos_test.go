package controlplane_test

import (
	"testing"
)

// The API server sets status.qosClass on create as upstream computes it:
// pod-level resources, when set, decide instead of the containers.
func TestPodQOSClass(t *testing.T) {
	ns := namespace(t)
	for name, tc := range map[string]struct{ podLevel, container, want string }{
		"containers-guaranteed": {"", "{requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 100m, memory: 16Mi}}", "Guaranteed"},
		"pod-guaranteed":        {"{requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 100m, memory: 16Mi}}", "{}", "Guaranteed"},
		"pod-burstable":         {"{requests: {cpu: 100m}, limits: {cpu: 200m}}", "{requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 100m, memory: 16Mi}}", "Burstable"},
		"best-effort":           {"", "{}", "BestEffort"},
		// Pod-level requests default to the pod-level limits (KEP-2837).
		"pod-limits-only": {"{limits: {cpu: 100m, memory: 16Mi}}", "{}", "Guaranteed"},
	} {
		podLevel := ""
		if tc.podLevel != "" {
			podLevel = "\n  resources: " + tc.podLevel
		}
		file := writeFile(t, name+".yaml", `apiVersion: v1
kind: Pod
metadata: {name: `+name+`}
spec:
  nodeName: fake-node`+podLevel+`
  containers:
  - name: c
    image: busybox:1
    resources: `+tc.container+`
`)
		mustKubectl(t, "-n", ns, "create", "-f", file)
		if got := mustKubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.qosClass}"); got != tc.want {
			t.Errorf("%s: qosClass %q, want %q", name, got, tc.want)
		}
		mustKubectl(t, "-n", ns, "delete", "pod", name, "--grace-period=0", "--force")
	}
}
