package registry

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestScaleHooks: every resource serving /scale has both hooks (the HTTP
// layer calls them without a check), and they read and write the
// replica count as the subresource served it before the hooks did.
func TestScaleHooks(t *testing.T) {
	reg := New(Config{})
	served := 0
	for _, r := range reg.All() {
		if r.HasSubresource("scale") != (r.GetScale != nil) || (r.GetScale != nil) != (r.SetScale != nil) {
			t.Errorf("%s/%s: scale subresource %v, GetScale %v, SetScale %v", r.GVK.Group, r.Plural,
				r.HasSubresource("scale"), r.GetScale != nil, r.SetScale != nil)
		}
		if r.HasSubresource("scale") {
			served++
		}
	}
	if served != 2 {
		t.Errorf("%d resources serve scale, want deployments and replicasets", served)
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	meta := metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: map[string]string{"x": "y"}}
	for _, tc := range []struct {
		plural string
		obj    runtime.Object
		get    func(runtime.Object) *int32
	}{
		{"deployments", &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel}, Status: appsv1.DeploymentStatus{Replicas: 2}},
			func(o runtime.Object) *int32 { return o.(*appsv1.Deployment).Spec.Replicas }},
		{"replicasets", &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: sel}, Status: appsv1.ReplicaSetStatus{Replicas: 2}},
			func(o runtime.Object) *int32 { return o.(*appsv1.ReplicaSet).Spec.Replicas }},
	} {
		res := reg.Get("apps", "v1", tc.plural)
		sc := res.GetScale(tc.obj)
		want := autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", ResourceVersion: "7"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 1}, // nil reads as the default
			Status:     autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"},
		}
		if !apiequality.Semantic.DeepEqual(*sc, want) {
			t.Errorf("%s: GetScale = %+v, want %+v", tc.plural, *sc, want)
		}
		if errs := res.SetScale(tc.obj, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}); len(errs) > 0 || !ptrEq(tc.get(tc.obj), 5) {
			t.Errorf("%s: SetScale(5) = %v, replicas %v", tc.plural, errs, tc.get(tc.obj))
		}
		if errs := res.SetScale(tc.obj, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: -1}}); len(errs) == 0 || !ptrEq(tc.get(tc.obj), 5) {
			t.Errorf("%s: SetScale(-1) = %v, replicas %v; want an error and no change", tc.plural, errs, tc.get(tc.obj))
		}
	}
}

func ptrEq(p *int32, v int32) bool { return ptr.Deref(p, -1) == v }
