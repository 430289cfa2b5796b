package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// wantTokenVolume is the volume upstream's ServiceAccount admission adds,
// written out field by field.
func wantTokenVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}
}

// sameJSON compares as the API serves: by the JSON.
func sameJSON(t *testing.T, what string, want, got any) {
	t.Helper()
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	if string(w) != string(g) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func tokenMount(name string) v1.VolumeMount {
	return v1.VolumeMount{Name: name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
}

func twoContainerPod() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Image: "busybox:1"}},
		Containers:     []v1.Container{{Name: "c", Image: "busybox:1"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox:1"}}},
	}}
}

func TestMountServiceAccountToken(t *testing.T) {
	own := v1.VolumeMount{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	cases := []struct {
		name   string
		change func(*v1.Pod)
		want   func(*v1.Pod) // the expected pod, from the unchanged one
	}{
		{"every init and regular container, not ephemeral ones", func(*v1.Pod) {}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{wantTokenVolume("kube-api-access-abcde")}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-abcde")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-abcde")}
		}},
		{"a container with its own mount at the path keeps it", func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{wantTokenVolume("kube-api-access-abcde")}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-abcde")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}},
		{"no container needs it: no volume", func(p *v1.Pod) {
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{own}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}, func(p *v1.Pod) {
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{own}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{own}
		}},
		{"an existing token volume is reused", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-zzzzz")}
		}, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-zzzzz")}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{tokenMount("kube-api-access-zzzzz")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := twoContainerPod(), twoContainerPod()
			tc.change(got)
			tc.want(want)
			mountServiceAccountToken(got, func() string { return "abcde" })
			sameJSON(t, "pod", want, got)
		})
	}
}

func TestShouldAutomount(t *testing.T) {
	cases := []struct {
		pod, sa *bool
		want    bool
	}{
		{nil, nil, true},
		{nil, ptr.To(false), false},
		{ptr.To(true), ptr.To(false), true},
		{ptr.To(false), ptr.To(true), false},
		{ptr.To(false), nil, false},
	}
	for _, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{AutomountServiceAccountToken: tc.pod}}
		sa := &v1.ServiceAccount{AutomountServiceAccountToken: tc.sa}
		if got := shouldAutomount(sa, pod); got != tc.want {
			t.Errorf("pod %v, service account %v: %v, want %v", tc.pod, tc.sa, got, tc.want)
		}
	}
}

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
	sameJSON(t, "volume", wantTokenVolume(name), pod.Spec.Volumes[0])
	sameJSON(t, "mounts", []v1.VolumeMount{tokenMount(name)}, pod.Spec.Containers[0].VolumeMounts)

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
		sameJSON(t, tc.pod.Name+": image pull secrets", tc.pull, got.Spec.ImagePullSecrets)
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
