package podworker

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/apiclient"
)

// TestFetchEnvObjectsMissing: a missing configMap or secret is nil, not
// the empty object client-go returns beside its NotFound, so the container
// gets the kubelet's `configmap "x" not found` rather than a missing key.
func TestFetchEnvObjectsMissing(t *testing.T) {
	get := apiclient.Objects{Client: fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "present", Namespace: "ns"}, Data: map[string]string{"k": "v"}})}
	ref := func(cm string) v1.EnvVar {
		return v1.EnvVar{Name: cm, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: cm}, Key: "k"}}}
	}
	c := &v1.Container{Name: "c", Env: []v1.EnvVar{ref("present"), ref("missing"), {Name: "S", ValueFrom: &v1.EnvVarSource{
		SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nosecret"}, Key: "k"}}}}}
	objs, err := fetchEnvObjects(context.Background(), get, "ns", c)
	if err != nil {
		t.Fatal(err)
	}
	if objs.ConfigMaps["present"] == nil || objs.ConfigMaps["present"].Data["k"] != "v" {
		t.Errorf("present configMap: %+v", objs.ConfigMaps["present"])
	}
	if cm, ok := objs.ConfigMaps["missing"]; !ok || cm != nil {
		t.Errorf("missing configMap: %+v, %v; want recorded as nil", cm, ok)
	}
	if s, ok := objs.Secrets["nosecret"]; !ok || s != nil {
		t.Errorf("missing secret: %+v, %v; want recorded as nil", s, ok)
	}
}
