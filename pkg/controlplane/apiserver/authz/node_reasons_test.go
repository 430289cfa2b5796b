package authz

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// fakeClaims lists no claims: no volume leads to a node here.
type fakeClaims []*v1.PersistentVolumeClaim

func (f fakeClaims) ListClaims(context.Context) ([]*v1.PersistentVolumeClaim, error) { return f, nil }

// TestNodeObjectRefusalReasons: upstream's reasons (node_authorizer.go)
// when a node asks for secrets, config maps, claims, volumes and service
// account tokens its pods do not lead to, or asks for them in ways the
// node authorizer never allows; and what its pods do lead to is allowed.
func TestNodeObjectRefusalReasons(t *testing.T) {
	res := func(kind, plural string, namespaced bool) *registry.Resource {
		return &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}, Plural: plural, Namespaced: namespaced}
	}
	secrets, configMaps := res("Secret", "secrets", true), res("ConfigMap", "configmaps", true)
	claims, volumes := res("PersistentVolumeClaim", "persistentvolumeclaims", true), res("PersistentVolume", "persistentvolumes", false)
	serviceAccounts := res("ServiceAccount", "serviceaccounts", true)
	mine := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine"}, Spec: v1.PodSpec{NodeName: "n1", ServiceAccountName: "runner",
		Volumes: []v1.Volume{
			{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "used"}}},
			{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "used"}}}},
			{Name: "d", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		}}}
	theirs := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}, Spec: v1.PodSpec{NodeName: "n2", ServiceAccountName: "other",
		Volumes: []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "theirs"}}}}}}
	z := &NodeAuthorizer{Pods: fakePods{mine, theirs}, Claims: fakeClaims{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-other"}},
	}}
	const none = "no relationship found between node 'n1' and this object"
	for _, tc := range []struct {
		a      Attributes
		allow  bool
		reason string
	}{
		// secrets and config maps: authorizeReadNamespacedObject
		{Attributes{Verb: "get", Resource: secrets, Namespace: "ns", Name: "used"}, true, ""},
		{Attributes{Verb: "watch", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name=used"}, true, ""},
		{Attributes{Verb: "get", Resource: secrets, Namespace: "ns", Name: "theirs"}, false, none},
		{Attributes{Verb: "get", Resource: secrets, Namespace: "ns", Name: "missing"}, false, none},
		{Attributes{Verb: "list", Resource: secrets, Namespace: "ns", FieldSelector: "metadata.name=theirs"}, false, none},
		{Attributes{Verb: "list", Resource: secrets, Namespace: "ns"}, false, "No Object name found"},
		{Attributes{Verb: "list", Resource: secrets}, false, "can only read namespaced object of this type"},
		{Attributes{Verb: "update", Resource: secrets, Namespace: "ns", Name: "used"}, false, "can only read resources of this type"},
		{Attributes{Verb: "delete", Resource: configMaps, Namespace: "ns", Name: "used"}, false, "can only read resources of this type"},
		{Attributes{Verb: "get", Resource: configMaps, Namespace: "ns", Name: "used"}, true, ""},
		{Attributes{Verb: "get", Resource: configMaps, Namespace: "ns", Name: "theirs"}, false, none},
		// claims and volumes: authorizeGet, authorizeStatusUpdate
		{Attributes{Verb: "get", Resource: claims, Namespace: "ns", Name: "data"}, true, ""},
		{Attributes{Verb: "get", Resource: claims, Namespace: "ns", Name: "other"}, false, none},
		{Attributes{Verb: "list", Resource: claims, Namespace: "ns"}, false, "can only get individual resources of this type"},
		{Attributes{Verb: "delete", Resource: claims, Namespace: "ns", Name: "data"}, false, "can only get individual resources of this type"},
		{Attributes{Verb: "get", Resource: claims, Namespace: "ns", Name: "data", Subresource: "status"}, false, "can only get/update/patch this type"},
		{Attributes{Verb: "patch", Resource: claims, Namespace: "ns", Name: "other", Subresource: "status"}, false, none},
		{Attributes{Verb: "get", Resource: volumes, Name: "pv-data"}, true, ""},
		{Attributes{Verb: "get", Resource: volumes, Name: "pv-other"}, false, none},
		{Attributes{Verb: "get", Resource: volumes, Name: "pv-data", Subresource: "status"}, false, "cannot get subresource"},
		{Attributes{Verb: "watch", Resource: volumes}, false, "can only get individual resources of this type"},
		// service accounts: authorizeCreateToken
		{Attributes{Verb: "create", Resource: serviceAccounts, Namespace: "ns", Name: "runner", Subresource: "token"}, true, ""},
		{Attributes{Verb: "create", Resource: serviceAccounts, Namespace: "ns", Name: "other", Subresource: "token"}, false, none},
		{Attributes{Verb: "get", Resource: serviceAccounts, Namespace: "ns", Name: "runner"}, false, "can only create tokens for individual service accounts"},
		{Attributes{Verb: "create", Resource: serviceAccounts, Namespace: "ns"}, false, "can only create tokens for individual service accounts"},
		{Attributes{Verb: "create", Resource: serviceAccounts, Namespace: "ns", Name: "runner"}, false, "can only create token subresource of serviceaccount"},
		// pods: a list or watch of one pod, as upstream's authorizePod
		{Attributes{Verb: "watch", Resource: podsResource, Namespace: "ns", FieldSelector: "metadata.name=mine"}, true, ""},
		{Attributes{Verb: "list", Resource: podsResource, Namespace: "ns", FieldSelector: "metadata.name=theirs"}, false, none},
		{Attributes{Verb: "list", Resource: podsResource, Namespace: "ns"}, false, "can only list/watch pods with spec.nodeName field selector"},
	} {
		tc.a.User = nodeUser
		d, reason, err := z.Authorize(context.Background(), tc.a)
		if (d == DecisionAllow) != tc.allow || reason != tc.reason || err != nil {
			t.Errorf("%s %s %s/%s/%s %q: %v %q %v, want allowed %v %q", tc.a.Verb, tc.a.Resource.Plural, tc.a.Namespace, tc.a.Name, tc.a.Subresource,
				tc.a.FieldSelector, d, reason, err, tc.allow, tc.reason)
		}
	}
}
