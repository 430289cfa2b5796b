package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLimitSecretReferences: upstream's messages for each kind of
// reference an enforcing service account does not list.
func TestLimitSecretReferences(t *testing.T) {
	sa := &v1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "strict"},
		Secrets:          []v1.ObjectReference{{Name: "ok"}},
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
	}
	envFrom := func(name string) v1.Container {
		return v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "E", ValueFrom: &v1.EnvVarSource{
			SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: "k"}}}}}
	}
	cases := []struct {
		name string
		pod  v1.PodSpec
		want string
	}{
		{"listed secrets", v1.PodSpec{Containers: []v1.Container{envFrom("ok")}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}}}, ""},
		{"init container env", v1.PodSpec{InitContainers: []v1.Container{envFrom("no")}},
			`init container c with envVar E referencing secret.secretName="no" is not allowed because service account strict does not reference that secret`},
		{"image pull secret", v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}, {Name: "ok"}}},
			`imagePullSecrets[1].name="ok" is not allowed because service account strict does not reference that imagePullSecret`},
		{"ephemeral container env", v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(envFrom("no"))}}},
			`ephemeral container c with envVar E referencing secret.secretName="no" is not allowed because service account strict does not reference that secret`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.pod}
			err := limitSecretReferences(sa, pod)
			if err == nil {
				err = limitEphemeralSecretReferences(sa, pod)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
