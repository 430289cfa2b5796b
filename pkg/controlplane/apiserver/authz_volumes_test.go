package apiserver

import (
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func testClaim(name, volume string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  volume,
		},
	}
}

func testVolume(name string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
}

// TestNodeAuthorizerVolumes: a node reads the claims of its pods (named
// and ephemeral) and the volumes bound to them, nothing else.
func TestNodeAuthorizerVolumes(t *testing.T) {
	ns := testNamespace(t)
	pod := testPod("with-claims")
	pod.Spec.NodeName = "node-a"
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "mine"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
			Spec: testClaim("", "").Spec}}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctxT(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	suffix := "-" + ns // volumes are cluster-wide: keep this test's apart
	for _, c := range []*v1.PersistentVolumeClaim{testClaim("mine", "pv-mine"+suffix), testClaim("with-claims-scratch", ""), testClaim("other", "pv-other"+suffix)} {
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctxT(t), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"pv-mine" + suffix, "pv-other" + suffix} {
		if _, err := client.CoreV1().PersistentVolumes().Create(ctxT(t), testVolume(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().PersistentVolumes().Delete(ctxT(t), name, metav1.DeleteOptions{}) })
	}
	node := request.User{Name: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	other := request.User{Name: "system:node:node-b", Groups: []string{"system:nodes", "system:authenticated"}}
	claims := "/api/v1/namespaces/" + ns + "/persistentvolumeclaims"
	cases := []struct {
		name   string
		user   request.User
		method string
		path   string
		want   int
	}{
		{"its pod's claim", node, http.MethodGet, claims + "/mine", http.StatusOK},
		{"its pod's ephemeral claim", node, http.MethodGet, claims + "/with-claims-scratch", http.StatusOK},
		{"another claim", node, http.MethodGet, claims + "/other", http.StatusForbidden},
		{"the claim from another node", other, http.MethodGet, claims + "/mine", http.StatusForbidden},
		{"claim status", node, http.MethodGet, claims + "/mine/status", http.StatusForbidden},
		{"list claims", node, http.MethodGet, claims, http.StatusForbidden},
		{"delete its claim", node, http.MethodDelete, claims + "/mine", http.StatusForbidden},
		{"its claim's volume", node, http.MethodGet, "/api/v1/persistentvolumes/pv-mine" + suffix, http.StatusOK},
		{"another volume", node, http.MethodGet, "/api/v1/persistentvolumes/pv-other" + suffix, http.StatusForbidden},
		{"the volume from another node", other, http.MethodGet, "/api/v1/persistentvolumes/pv-mine" + suffix, http.StatusForbidden},
		{"list volumes", node, http.MethodGet, "/api/v1/persistentvolumes", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := asUser(t, tc.user, tc.method, tc.path); got != tc.want {
				t.Errorf("%s %s as %s: %d, want %d", tc.method, tc.path, tc.user.Name, got, tc.want)
			}
		})
	}
}
