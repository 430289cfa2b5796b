package apiserver

import (
	"net/http"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func patchTypeOf(r *http.Request) types.PatchType {
	return types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
}

// scaleOf is the autoscaling/v1 Scale view of a deployment or replica set.
func scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	sc := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sc.ObjectMeta = scaleMeta(o.ObjectMeta)
		sc.Spec.Replicas = deref32(o.Spec.Replicas)
		sc.Status.Replicas = o.Status.Replicas
		sel = o.Spec.Selector
	case *appsv1.ReplicaSet:
		sc.ObjectMeta = scaleMeta(o.ObjectMeta)
		sc.Spec.Replicas = deref32(o.Spec.Replicas)
		sc.Status.Replicas = o.Status.Replicas
		sel = o.Spec.Selector
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && sel != nil {
		sc.Status.Selector = s.String()
	}
	return sc
}

func scaleMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp}
}

func setReplicas(obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	}
}

func deref32(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
