package apiserver

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/internal/apitest"
)

// tokenVolumeName5 is the prefix and five characters of upstream's
// generated-name alphabet.
var tokenVolumeName5 = regexp.MustCompile(`^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// createPodAs posts a pod as the admin and returns the stored one.
func createPodAs(t *testing.T, ns string, pod *v1.Pod) *v1.Pod {
	t.Helper()
	created, err := client.CoreV1().Pods(ns).Create(ctxT(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	return created
}

func createServiceAccount(t *testing.T, ns string, sa *v1.ServiceAccount) {
	t.Helper()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctxT(t), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceAccountAdmission runs the plugin in the server: the default
// account, the token volume's shape, the opt-outs and the image pull
// secrets.
func TestServiceAccountAdmission(t *testing.T) {
	ns := testNamespace(t)
	pod := createPodAs(t, ns, testPod("plain"))
	if pod.Spec.ServiceAccountName != "default" || len(pod.Spec.Volumes) != 1 {
		t.Fatalf("service account %q, volumes %+v", pod.Spec.ServiceAccountName, pod.Spec.Volumes)
	}
	name := pod.Spec.Volumes[0].Name
	if !tokenVolumeName5.MatchString(name) {
		t.Errorf("volume name %q, want kube-api-access- and 5 of upstream's characters", name)
	}
	apitest.SameJSON(t, "volume", apitest.WantTokenVolume(name), pod.Spec.Volumes[0])
	apitest.SameJSON(t, "mounts", []v1.VolumeMount{apitest.TokenMount(name)}, pod.Spec.Containers[0].VolumeMounts)

	createServiceAccount(t, ns, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}}})
	optOut := testPod("pod-opts-out")
	optOut.Spec.AutomountServiceAccountToken = ptr.To(false)
	saOptsOut := testPod("sa-opts-out")
	saOptsOut.Spec.ServiceAccountName = "quiet"
	podOptsIn := testPod("pod-opts-in")
	podOptsIn.Spec.ServiceAccountName = "quiet"
	podOptsIn.Spec.AutomountServiceAccountToken = ptr.To(true)
	for _, tc := range []struct {
		pod     *v1.Pod
		volumes int
		pull    []v1.LocalObjectReference
	}{
		{optOut, 0, nil},
		{saOptsOut, 0, []v1.LocalObjectReference{{Name: "pull"}}},
		{podOptsIn, 1, []v1.LocalObjectReference{{Name: "pull"}}},
	} {
		got := createPodAs(t, ns, tc.pod)
		if len(got.Spec.Volumes) != tc.volumes || len(got.Spec.Containers[0].VolumeMounts) != tc.volumes {
			t.Errorf("%s: volumes %+v, mounts %+v; want %d", tc.pod.Name, got.Spec.Volumes, got.Spec.Containers[0].VolumeMounts, tc.volumes)
		}
		apitest.SameJSON(t, tc.pod.Name+": image pull secrets", tc.pull, got.Spec.ImagePullSecrets)
	}
}

// TestServiceAccountAdmissionRefusals: upstream's errors for a missing
// account, mirror pods' references and enforced mountable secrets.
func TestServiceAccountAdmissionRefusals(t *testing.T) {
	ns := testNamespace(t)
	createServiceAccount(t, ns, &v1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "strict", Annotations: map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}},
		Secrets:    []v1.ObjectReference{{Name: "allowed"}},
	})
	pods := "/api/v1/namespaces/" + ns + "/pods"
	mirror := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m","annotations":{"kubernetes.io/config.mirror":"h"}},"spec":{"nodeName":"n",%s"containers":[{"name":"c","image":"busybox:1"}]}}`
	runRestrictionCases(t, admin, []restrictionCase{
		{"missing service account", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"serviceAccountName":"sa","containers":[{"name":"c","image":"busybox:1"}]}}`,
			http.StatusForbidden, `pods "x" is forbidden: error looking up service account ` + ns + `/sa: serviceaccount "sa" not found`},
		{"mirror pod with a service account", http.MethodPost, pods, fmt.Sprintf(mirror, `"serviceAccountName":"default",`),
			http.StatusForbidden, `pods "m" is forbidden: a mirror pod may not reference service accounts`},
		{"mirror pod with a secret in env", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m","annotations":{"kubernetes.io/config.mirror":"h"}},
			"spec":{"containers":[{"name":"c","image":"busybox:1","envFrom":[{"secretRef":{"name":"s"}}]}]}}`,
			http.StatusForbidden, `pods "m" is forbidden: a mirror pod may not reference secrets`},
		{"mirror pod with a token projection", http.MethodPost, pods, fmt.Sprintf(mirror, `"volumes":[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"t"}}]}}],`),
			http.StatusForbidden, `pods "m" is forbidden: a mirror pod may not use ServiceAccountToken volume projections`},
		{"secret volume the account does not list", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},"spec":{"serviceAccountName":"strict",
			"volumes":[{"name":"v","secret":{"secretName":"other"}}],"containers":[{"name":"c","image":"busybox:1"}]}}`,
			http.StatusForbidden, `pods "s" is forbidden: volume with secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"envFrom secret the account does not list", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},"spec":{"serviceAccountName":"strict",
			"containers":[{"name":"c","image":"busybox:1","envFrom":[{"secretRef":{"name":"other"}}]}]}}`,
			http.StatusForbidden, `pods "s" is forbidden: container c with envFrom referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"secret the account lists", http.MethodPost, pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},"spec":{"serviceAccountName":"strict",
			"volumes":[{"name":"v","secret":{"secretName":"allowed"}}],"containers":[{"name":"c","image":"busybox:1"}]}}`, http.StatusCreated, ""},
		{"mirror pod", http.MethodPost, pods, fmt.Sprintf(mirror, ""), http.StatusCreated, ""},
	})
	// Mirror pods are left as they are: no account, no token volume.
	m, err := client.CoreV1().Pods(ns).Get(ctxT(t), "m", metav1.GetOptions{})
	if err != nil || m.Spec.ServiceAccountName != "" || len(m.Spec.Volumes) != 0 || len(m.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("mirror pod changed: %v %+v", err, m)
	}
}

// TestDefaultServiceAccountRecreated: the server does the service account
// controller's work for a deleted "default".
func TestDefaultServiceAccountRecreated(t *testing.T) {
	ns := testNamespace(t)
	if err := client.CoreV1().ServiceAccounts(ns).Delete(ctxT(t), "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod := createPodAs(t, ns, testPod("p")); pod.Spec.ServiceAccountName != "default" {
		t.Errorf("service account %q", pod.Spec.ServiceAccountName)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctxT(t), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default service account: %v", err)
	}
}
