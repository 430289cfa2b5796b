package controlplane_test

import "testing"

// hostnameOverride is served (KEP-4762, GA in v1.37) with upstream's
// validation: it may not be combined with hostNetwork or
// setHostnameAsFQDN; on its own, the API keeps it.
func TestPodHostnameOverride(t *testing.T) {
	ns := namespace(t)
	bad := writeFile(t, "bad.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: override-bad
spec:
  nodeName: fake-node
  hostNetwork: true
  setHostnameAsFQDN: true
  hostnameOverride: www.example.com
  containers:
  - {name: c, image: busybox:1}
`)
	want := `The Pod "override-bad" is invalid: ` + "\n" +
		`* spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true` + "\n" +
		`* spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true` + "\n"
	if _, stderr, err := kubectl(t, "-n", ns, "create", "-f", bad); err == nil || stderr != want {
		t.Errorf("create -f: err=%v\nstderr: %q\nwant:   %q", err, stderr, want)
	}
	good := writeFile(t, "good.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: override
spec:
  nodeName: fake-node
  hostnameOverride: www.example.com
  containers:
  - {name: c, image: busybox:1}
`)
	mustKubectl(t, "-n", ns, "create", "-f", good)
	if out := mustKubectl(t, "-n", ns, "get", "pod", "override", "-o", "jsonpath={.spec.hostnameOverride}"); out != "www.example.com" {
		t.Errorf("spec.hostnameOverride read back: %q", out)
	}
	mustKubectl(t, "-n", ns, "delete", "pod", "override", "--grace-period=0", "--force")
}
