package apiserver

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func resizablePod(name string) *v1.Pod {
	p := testPod(name)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	return p
}

func TestPodResizeSubresource(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	created, err := pods.Create(ctxT(t), resizablePod("p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("p").SubResource("resize").Do(ctxT(t)).Into(&got); err != nil || got.UID != created.UID {
		t.Fatalf("get pods/resize: %v, uid %q want %q", err, got.UID, created.UID)
	}

	// What kubectl patch --subresource resize sends; the image and label
	// in the same patch are dropped, as upstream's resize strategy drops them.
	patch := `{"metadata":{"labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"busybox:other","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`
	patched, err := pods.Patch(ctxT(t), "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	c := patched.Spec.Containers[0]
	if c.Resources.Limits.Cpu().String() != "200m" || c.Resources.Requests.Cpu().String() != "200m" {
		t.Errorf("cpu not resized: %+v", c.Resources)
	}
	if c.Image != "busybox:1" || patched.Labels["x"] != "" {
		t.Errorf("resize changed more than resources: image %q labels %v", c.Image, patched.Labels)
	}
	if patched.Generation != created.Generation+1 {
		t.Errorf("generation %d, want %d", patched.Generation, created.Generation+1)
	}

	for _, tc := range []struct{ name, patch, want string }{
		{"qos", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"400m"}}}]}}`,
			"Pod QOS Class may not change as a result of resizing"},
		{"removed", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":null}}}]}}`,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{"other resource", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"},"limits":{"ephemeral-storage":"1Gi"}}}]}}`,
			"spec: Forbidden: only cpu and memory resources are mutable"},
	} {
		_, err := pods.Patch(ctxT(t), "p", types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Invalid with %q", tc.name, err, tc.want)
		}
	}

	// A memory limit decrease is allowed whatever the resizePolicy (since
	// v1.34: the node checks the usage before it applies it).
	lower := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"32Mi"},"limits":{"memory":"32Mi"}}}]}}`
	if _, err := pods.Patch(ctxT(t), "p", types.StrategicMergePatchType, []byte(lower), metav1.PatchOptions{}, "resize"); err != nil {
		t.Errorf("memory decrease: %v", err)
	}

	// The pod itself still may not change its resources.
	cur, err := pods.Get(ctxT(t), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("300m")
	cur.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("300m")
	if _, err := pods.Update(ctxT(t), cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("resources changed through the pod itself: %v", err)
	}
}

func TestResizePolicyValidatedOnCreate(t *testing.T) {
	ns := testNamespace(t)
	p := resizablePod("bad")
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
	}
	_, err := client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{})
	for _, want := range []string{
		`spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"`,
		`spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when ` + "`restartPolicy`" + ` is 'Never'`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("create: %v, want %q", err, want)
		}
	}
}
