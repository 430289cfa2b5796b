package controlplane_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const endpointsManifest = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {tier: front}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web}
spec:
  nodeName: %[1]s
  containers:
  - {name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  labels: {app: web}
spec:
  nodeName: %[1]s
  containers:
  - {name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}
`

// reportStatus patches a pod's status through the status subresource, as
// the agent reports it: running with an IP, Ready or not.
func reportStatus(t *testing.T, ns, pod, ip string, ready bool) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	patch := fmt.Sprintf(`{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}],"conditions":[{"type":"Ready","status":%q}]}}`, ip, ip, status)
	mustKubectl(t, "-n", ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch)
}

// TestEndpointsAndSlicesWithKubectl: pods reported Ready behind a service
// show in `kubectl get endpoints` and `kubectl get endpointslices`; one
// turning unready moves to notReadyAddresses and ready=false.
func TestEndpointsAndSlicesWithKubectl(t *testing.T) {
	ns := namespace(t)
	const node = "e2e-endpoints-node"
	t.Cleanup(func() {
		_, _, _ = kubectl(t, "-n", ns, "delete", "pod", "--all", "--force", "--grace-period=0")
		_, _, _ = kubectl(t, "delete", "node", node, "--ignore-not-found")
	})
	mustKubectl(t, "create", "-f", writeFile(t, "node.yaml", readyNodeManifest(node)))
	mustKubectl(t, "-n", ns, "apply", "-f", writeFile(t, "web.yaml", fmt.Sprintf(endpointsManifest, node)))
	reportStatus(t, ns, "web-1", "10.244.7.11", true)
	reportStatus(t, ns, "web-2", "10.244.7.12", true)

	both := "10.244.7.11:8080,10.244.7.12:8080"
	out := waitKubectl(t, "endpoints list both pods", func(out string) bool { return strings.Contains(out, both) },
		"-n", ns, "get", "endpoints", "web")
	if got := headers(out); !slices.Equal(got, []string{"NAME", "ENDPOINTS", "AGE"}) {
		t.Errorf("get endpoints header: %q", got)
	}
	checkRow(t, "get endpoints", rows(out)[1], []string{"web", both, "*"})

	out = waitKubectl(t, "slice lists both pods", func(out string) bool { return strings.Contains(out, "10.244.7.11,10.244.7.12") },
		"-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name=web")
	if got := headers(out); !slices.Equal(got, []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}) {
		t.Errorf("get endpointslices header: %q", got)
	}
	row := rows(out)[1]
	checkRow(t, "get endpointslices", row, []string{"*", "IPv4", "8080", "10.244.7.11,10.244.7.12", "*"})
	if !strings.HasPrefix(row[0], "web-") {
		t.Errorf("slice name %q, want web-<suffix>", row[0])
	}
	labels := mustKubectl(t, "-n", ns, "get", "endpointslice", row[0], "-o", "jsonpath={.metadata.labels}")
	for _, want := range []string{`"endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io"`, `"kubernetes.io/service-name":"web"`, `"tier":"front"`} {
		if !strings.Contains(labels, want) {
			t.Errorf("slice labels %s lack %s", labels, want)
		}
	}
	if got := mustKubectl(t, "-n", ns, "get", "endpointslice", row[0], "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}"); got != "Service/web" {
		t.Errorf("slice owner %q, want Service/web", got)
	}
	if out := mustKubectl(t, "-n", ns, "describe", "service", "web"); !strings.Contains(out, "10.244.7.11:8080,10.244.7.12:8080") {
		t.Errorf("describe service lacks the endpoints:\n%s", out)
	}

	// web-2 turns unready.
	reportStatus(t, ns, "web-2", "10.244.7.12", false)
	waitKubectl(t, "web-2 not ready in endpoints", func(out string) bool { return out == "10.244.7.11 10.244.7.12" },
		"-n", ns, "get", "endpoints", "web", "-o", "jsonpath={.subsets[0].addresses[*].ip} {.subsets[0].notReadyAddresses[*].ip}")
	checkRow(t, "get endpoints after web-2 turned unready", rows(mustKubectl(t, "-n", ns, "get", "endpoints", "web"))[1],
		[]string{"web", "10.244.7.11:8080", "*"})
	waitKubectl(t, "web-2 ready=false in the slice", func(out string) bool {
		return out == "10.244.7.11=true/true 10.244.7.12=false/false "
	}, "-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
		"-o", "jsonpath={range .items[*].endpoints[*]}{.addresses[0]}={.conditions.ready}/{.conditions.serving} {end}")
}

// TestEndpointSliceDiscovery: the resource is discoverable and explained
// from the OpenAPI documents.
func TestEndpointSliceDiscovery(t *testing.T) {
	resources := rows(mustKubectl(t, "api-resources", "--api-group=discovery.k8s.io"))
	if !slices.ContainsFunc(resources, func(r []string) bool {
		return slices.Equal(r, []string{"endpointslices", "discovery.k8s.io/v1", "true", "EndpointSlice"})
	}) {
		t.Errorf("api-resources lacks endpointslices: %q", resources)
	}
	out := mustKubectl(t, "explain", "endpointslice.endpoints.conditions")
	for _, s := range []string{"GROUP:      discovery.k8s.io\n", "KIND:       EndpointSlice\n", "\n  ready\t<boolean>\n", "\n  terminating\t<boolean>\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("explain endpointslice.endpoints.conditions lacks %q:\n%s", s, out)
		}
	}
}
