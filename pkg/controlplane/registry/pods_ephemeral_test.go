package registry

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrepareForEphemeralContainersUpdate(t *testing.T) {
	old := &v1.Pod{ObjectMeta: meta("p"), Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if errs := create(pods, old); errs != nil {
		t.Fatal(errs)
	}
	old.Labels = map[string]string{"app": "web"}
	old.Status.Phase = v1.PodRunning

	// Everything but the ephemeral containers is the stored pod's.
	req := old.DeepCopy()
	req.Labels = map[string]string{"app": "other"}
	req.Annotations = map[string]string{"sneaky": "yes"}
	req.Finalizers = []string{"example.com/hold"}
	req.DeletionTimestamp = &metav1.Time{}
	req.Spec.Containers[0].Image = "busybox:2"
	req.Spec.NodeName = "node-1"
	req.Status = v1.PodStatus{Phase: v1.PodFailed}
	req.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "c",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1"}}}
	pods.Default(req)
	pods.PrepareForEphemeralContainersUpdate(req, old)

	if req.Labels["app"] != "web" || req.Annotations != nil || req.Finalizers != nil || req.DeletionTimestamp != nil {
		t.Errorf("metadata not reset: labels %v annotations %v finalizers %v deletion %v", req.Labels, req.Annotations, req.Finalizers, req.DeletionTimestamp)
	}
	if req.Spec.Containers[0].Image != "busybox" || req.Spec.NodeName != "" || req.Status.Phase != v1.PodRunning {
		t.Errorf("spec or status not the stored pod's: image %q node %q phase %q", req.Spec.Containers[0].Image, req.Spec.NodeName, req.Status.Phase)
	}
	if len(req.Spec.EphemeralContainers) != 1 || req.Generation != 2 {
		t.Errorf("ephemeral containers %v, generation %d; want the new container and generation 2", req.Spec.EphemeralContainers, req.Generation)
	}
	expectErrors(t, "adding a debug container", pods.ValidateEphemeralContainersUpdate(req, old))

	// Nothing added: the generation stays.
	same := old.DeepCopy()
	pods.PrepareForEphemeralContainersUpdate(same, old)
	if same.Generation != 1 {
		t.Errorf("no-op update: generation %d, want 1", same.Generation)
	}
}
