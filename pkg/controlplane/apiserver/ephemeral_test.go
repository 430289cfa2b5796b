package apiserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func debugger(name string) v1.EphemeralContainer {
	return v1.EphemeralContainer{TargetContainerName: "c", EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: name, Image: "busybox:1", Command: []string{"sleep", "3600"}, TerminationMessagePolicy: v1.TerminationMessageReadFile}}
}

func ephemeralNames(p *v1.Pod) []string {
	var names []string
	for _, ec := range p.Spec.EphemeralContainers {
		names = append(names, ec.Name)
	}
	return names
}

func TestEphemeralContainersUpdate(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	created, err := pods.Create(ctxT(t), testPod("p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The subresource's GET is the pod.
	var got v1.Pod
	if err := client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("p").SubResource("ephemeralcontainers").Do(ctxT(t)).Into(&got); err != nil || got.UID != created.UID {
		t.Fatalf("get pods/ephemeralcontainers: %v, uid %q want %q", err, got.UID, created.UID)
	}

	// UPDATE keeps only spec.ephemeralContainers of the request.
	req := created.DeepCopy()
	req.Spec.EphemeralContainers = []v1.EphemeralContainer{debugger("one")}
	req.Labels = map[string]string{"app": "ignored"}
	req.Spec.Containers[0].Image = "busybox:ignored"
	req.Status.Phase = v1.PodFailed
	updated, err := pods.UpdateEphemeralContainers(ctxT(t), "p", req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ephemeralNames(updated), []string{"one"}) || updated.Spec.EphemeralContainers[0].TargetContainerName != "c" {
		t.Errorf("update: ephemeral containers %+v", updated.Spec.EphemeralContainers)
	}
	if updated.Labels["app"] != "web" || updated.Spec.Containers[0].Image != "busybox:1" || updated.Status.Phase != v1.PodPending {
		t.Errorf("update changed more than ephemeral containers: labels %v image %q phase %q", updated.Labels, updated.Spec.Containers[0].Image, updated.Status.Phase)
	}
	if updated.Generation != created.Generation+1 {
		t.Errorf("generation %d, want %d", updated.Generation, created.Generation+1)
	}
	if ec := updated.Spec.EphemeralContainers[0]; ec.ImagePullPolicy != v1.PullIfNotPresent || ec.TerminationMessagePath != v1.TerminationMessagePathDefault {
		t.Errorf("ephemeral container not defaulted: %+v", ec)
	}

	// A strategic merge patch as kubectl debug computes it.
	withTwo := updated.DeepCopy()
	withTwo.Spec.EphemeralContainers = append(withTwo.Spec.EphemeralContainers, debugger("two"))
	patch := twoWayPatch(t, updated, withTwo)
	patched, err := pods.Patch(ctxT(t), "p", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ephemeralNames(patched), []string{"one", "two"}) || patched.Generation != updated.Generation+1 {
		t.Errorf("strategic merge patch: %v, generation %d", ephemeralNames(patched), patched.Generation)
	}
	// A merge patch of anything else changes nothing.
	if same, err := pods.Patch(ctxT(t), "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}},"spec":{"activeDeadlineSeconds":5}}`),
		metav1.PatchOptions{}, "ephemeralcontainers"); err != nil || same.Labels["x"] != "" || same.Spec.ActiveDeadlineSeconds != nil || same.Generation != patched.Generation {
		t.Errorf("merge patch of other fields: %v, labels %v deadline %v generation %d", err, same.Labels, same.Spec.ActiveDeadlineSeconds, same.Generation)
	}
}

func twoWayPatch(t *testing.T, from, to *v1.Pod) []byte {
	t.Helper()
	a, _ := json.Marshal(from)
	b, _ := json.Marshal(to)
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

func TestEphemeralContainersValidation(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctxT(t), testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := func(pt types.PatchType, patch string) error {
		_, err := pods.Patch(ctxT(t), "p", pt, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
		return err
	}
	add := `{"spec":{"ephemeralContainers":[{"name":"one","image":"busybox:1","targetContainerName":"c"}]}}`
	if err := sub(types.StrategicMergePatchType, add); err != nil {
		t.Fatal(err)
	}
	// Without $setElementOrder a strategic merge patch puts its own list
	// items first: the new container is [0].
	cases := []struct {
		name  string
		pt    types.PatchType
		patch string
		want  string
	}{
		{"removal", types.MergePatchType, `{"spec":{"ephemeralContainers":[]}}`,
			`Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "one" may not be removed` + "\n"},
		{"change", types.JSONPatchType, `[{"op":"replace","path":"/spec/ephemeralContainers/0/image","value":"busybox:2"}]`,
			`Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "one" may not be changed`},
		{"name taken", types.StrategicMergePatchType, `{"spec":{"ephemeralContainers":[{"name":"c","image":"busybox:1"}]}}`,
			`Pod "p" is invalid: spec.ephemeralContainers[0].name: Duplicate value: "c"`},
		{"no such target", types.StrategicMergePatchType, `{"spec":{"ephemeralContainers":[{"name":"two","image":"busybox:1","targetContainerName":"nope"}]}}`,
			`Pod "p" is invalid: spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`},
		{"no image", types.StrategicMergePatchType, `{"spec":{"ephemeralContainers":[{"name":"two"}]}}`,
			`Pod "p" is invalid: spec.ephemeralContainers[0].image: Required value`},
		{"ports and probes", types.StrategicMergePatchType,
			`{"spec":{"ephemeralContainers":[{"name":"two","image":"busybox:1","ports":[{"containerPort":80}],"readinessProbe":{"exec":{"command":["true"]}}}]}}`,
			`Pod "p" is invalid: [spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container, ` +
				`spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sub(tc.pt, tc.patch)
			if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant 422 %s", err, tc.want)
			}
		})
	}
	// The pod itself does not take ephemeral containers, as upstream.
	_, err := pods.Patch(ctxT(t), "p", types.StrategicMergePatchType, []byte(`{"spec":{"ephemeralContainers":[{"name":"two","image":"busybox:1"}]}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
		t.Errorf("ephemeral container through the pod: %v", err)
	}
	// A missing pod is a 404 naming it (kubectl debug reads an unnamed 404
	// as "ephemeral containers are disabled").
	if _, err = pods.Patch(ctxT(t), "missing", types.StrategicMergePatchType, []byte(add), metav1.PatchOptions{}, "ephemeralcontainers"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing pod: %v", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || st.Details.Name != "missing" {
		t.Errorf("missing pod: details %+v", st.Details)
	}
}

func TestEphemeralContainersStaticPod(t *testing.T) {
	ns := testNamespace(t)
	p := testPod("m")
	p.Spec.NodeName = "node-s"
	p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "h"}
	if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := client.CoreV1().Pods(ns).Patch(ctxT(t), "m", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox:1"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
	if want := `Pod "m" is invalid: []: Forbidden: static pods do not support ephemeral containers`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestEphemeralContainersDiscovery(t *testing.T) {
	list, err := client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name == "pods/ephemeralcontainers" {
			if r.Kind != "Pod" || !slices.Equal(r.Verbs, []string{"get", "patch", "update"}) || !r.Namespaced {
				t.Errorf("pods/ephemeralcontainers: %+v", r)
			}
			return
		}
	}
	t.Error("discovery lacks pods/ephemeralcontainers")
}

func TestEphemeralContainersAccess(t *testing.T) {
	ns := testNamespace(t)
	boundPod(t, ns, "mine", "node-e")
	path := "/api/v1/namespaces/" + ns + "/pods/mine/ephemeralcontainers"
	add := `{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox:1","targetContainerName":"c"}]}}`
	// Upstream's node authorizer lets a node write only pods/status (and
	// create evictions); no other pod subresource, even of its own pods.
	runRestrictionCases(t, nodeUser("node-e"), []restrictionCase{
		{"node patches", http.MethodPatch, path, add, http.StatusForbidden,
			`pods "mine" is forbidden: User "system:node:node-e" cannot patch resource "pods/ephemeralcontainers" in API group "" in the namespace "` + ns + `"`},
		{"node reads", http.MethodGet, path, "", http.StatusForbidden, ""},
	})
	runRestrictionCases(t, request.User{Name: "bob", Groups: []string{"system:authenticated"}}, []restrictionCase{
		{"stranger patches", http.MethodPatch, path, add, http.StatusForbidden, ""},
	})
	runRestrictionCases(t, admin, []restrictionCase{
		{"admin reads", http.MethodGet, path, "", http.StatusOK, ""},
		{"admin patches", http.MethodPatch, path, add, http.StatusOK, ""},
	})
}

func TestEphemeralContainersPodSecurity(t *testing.T) {
	ns := labelledNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	if rec := serveAs(t, admin, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", plainPod); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	path := "/api/v1/namespaces/" + ns + "/pods/p/ephemeralcontainers"
	privileged := `{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox:1","securityContext":{"privileged":true}}]}}`
	runRestrictionCases(t, admin, []restrictionCase{
		{"privileged debug container", http.MethodPatch, path, privileged, http.StatusForbidden,
			`pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "d" must not set securityContext.privileged=true)`},
		{"plain debug container", http.MethodPatch, path, `{"spec":{"ephemeralContainers":[{"name":"d","image":"busybox:1"}]}}`, http.StatusOK, ""},
	})
}
