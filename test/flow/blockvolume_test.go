package flow

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestBlockVolumeRefused: a valid pod that maps a Block-mode claim as a
// device (volumeDevices) is scheduled, its claim bound, but the agent has
// no block volume mapper: the volume fails with a FailedMount event and
// the container is never created, rather than running without its device.
func TestBlockVolumeRefused(t *testing.T) {
	ctx := context.Background()
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/block-user", "pvc/block-data", "pv/flow-block-pv")
	manifest := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: flow-block-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeMode: Block
  hostPath: {path: %s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: block-data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeMode: Block
  resources: {requests: {storage: 100Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: block-user}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeDevices: [{name: disk, devicePath: /dev/xvda}]
  volumes:
  - {name: disk, persistentVolumeClaim: {claimName: block-data}}
`, t.TempDir(), framework.BusyboxImage)
	mustKubectl(t, "apply", "-f", writeTemp(t, "block.yaml", manifest))
	const want = `MountVolume.SetUp failed for volume "disk" : PV "flow-block-pv": block volume mode is not supported by this node agent`
	waitFor(t, apiTimeout, "the FailedMount event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "block-user", "reason": "FailedMount"}.String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && e.Message == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %+v", evs.Items)
	})
	if out := mustKubectl(t, "get", "pvc", "block-data", "-o", "jsonpath={.status.phase}/{.spec.volumeName}"); out != "Bound/flow-block-pv" {
		t.Errorf("claim: %q", out)
	}
	p, err := admin.CoreV1().Pods("default").Get(ctx, "block-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != nodeName || p.Status.Phase != v1.PodPending {
		t.Errorf("pod on %q in phase %s, want Pending on %q", p.Spec.NodeName, p.Status.Phase, nodeName)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil || cs.ContainerID != "" {
			t.Errorf("container %s: %+v, want waiting and never created", cs.Name, cs.State)
		}
	}
}
