package controlplane_test

import (
	"testing"
)

// The API takes container restart rules (KEP-5307) with upstream's
// validation: a rule needs the container's own restartPolicy, and a
// sidecar takes none.
func TestPodRestartRules(t *testing.T) {
	ns := namespace(t)
	good := writeFile(t, "rules.yaml", `apiVersion: v1
kind: Pod
metadata: {name: rules}
spec:
  nodeName: fake-node
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
`)
	if out := mustKubectl(t, "-n", ns, "create", "-f", good); out != "pod/rules created\n" {
		t.Errorf("create -f: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "pod", "rules", "-o", "jsonpath={.spec.containers[0].restartPolicyRules[0].exitCodes.values}"); out != "[42]" {
		t.Errorf("stored rule values: got %q", out)
	}
	mustKubectl(t, "-n", ns, "delete", "pod", "rules", "--grace-period=0", "--force")

	bad := writeFile(t, "bad.yaml", `apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  initContainers:
  - name: side
    image: busybox:1
    restartPolicy: Always
    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [1]}}]
  containers:
  - name: c
    image: busybox:1
    restartPolicyRules: [{action: Restart, exitCodes: {operator: Is, values: [42]}}]
`)
	want := `The Pod "bad" is invalid: ` + "\n" +
		`* spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used` + "\n" +
		`* spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn"` + "\n" +
		`* spec.initContainers[0].restartPolicyRules: Forbidden: restartPolicyRules are not allowed for init containers with restart policy Always` + "\n"
	if _, stderr, err := kubectl(t, "-n", ns, "create", "-f", bad); err == nil || stderr != want {
		t.Errorf("create -f invalid rules: err=%v\nstderr: %q\nwant:   %q", err, stderr, want)
	}
}
