package e2e

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// A pod that claims devices (resourceClaims) never runs without them: the
// agent does no dynamic resource allocation, so the pod gets no sandbox
// and the kubelet's FailedPrepareDynamicResources event.
func TestResourceClaimsRefused(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("claims.yaml", `apiVersion: v1
kind: Pod
metadata: {name: claims}
spec:
  terminationGracePeriodSeconds: 2
  resourceClaims:
  - {name: gpu, resourceClaimName: gpu-claim}
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sleep", "3600"]
    resources: {claims: [{name: gpu}]}
`); err != nil {
		t.Fatal(err)
	}
	waitNoSandbox(t, a, "claims", `reason=FailedPrepareDynamicResources message="Failed to prepare dynamic resources: prepare dynamic resources: resource claim \"gpu\": this node agent does not do dynamic resource allocation (no DRA drivers)"`)
}

// waitNoSandbox waits for the agent to log the refusal of a static pod's
// sandbox, then checks the pod is Pending with no sandbox in the runtime.
func waitNoSandbox(t *testing.T, a *framework.Agent, name, logLine string) {
	t.Helper()
	if err := a.WaitLog(logLine, podTimeout); err != nil {
		t.Fatal(err)
	}
	p, err := a.Pod(name)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if sbs := sandboxIDs(t, string(p.UID)); len(sbs) != 0 {
		t.Errorf("sandboxes created for the pod: %v", sbs)
	}
}

// volumeDevices must come from a claim: a static pod that maps an
// emptyDir as a block device is refused at validation, as the API server
// refuses it (ValidateVolumeDevices), and never runs. (A valid pod with a
// Block-mode claim is test/flow's TestBlockVolumeRefused.)
func TestVolumeDevicesRefused(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("blockdev.yaml", `apiVersion: v1
kind: Pod
metadata: {name: blockdev}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: disk, emptyDir: {}}
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sleep", "3600"]
    volumeDevices: [{name: disk, devicePath: /dev/xvda}]
`); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"blockdev.yaml", "spec.containers[0].volumeDevices[0].name",
		"can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"} {
		if err := a.WaitLog(want, podTimeout); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := a.Pod("blockdev"); err != nil || p != nil {
		t.Errorf("the refused pod: %+v, %v", p, err)
	}
}
