package registry

import (
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestResourcesTypes(t *testing.T) {
	tests := []struct {
		group, version, plural string
		obj, list              runtime.Object
		kind                   string
		namespaced             bool
	}{
		{"", "v1", "pods", &v1.Pod{}, &v1.PodList{}, "Pod", true},
		{"", "v1", "namespaces", &v1.Namespace{}, &v1.NamespaceList{}, "Namespace", false},
		{"", "v1", "nodes", &v1.Node{}, &v1.NodeList{}, "Node", false},
		{"", "v1", "events", &v1.Event{}, &v1.EventList{}, "Event", true},
		{"", "v1", "configmaps", &v1.ConfigMap{}, &v1.ConfigMapList{}, "ConfigMap", true},
		{"", "v1", "secrets", &v1.Secret{}, &v1.SecretList{}, "Secret", true},
		{"", "v1", "serviceaccounts", &v1.ServiceAccount{}, &v1.ServiceAccountList{}, "ServiceAccount", true},
		{"", "v1", "services", &v1.Service{}, &v1.ServiceList{}, "Service", true},
		{"", "v1", "endpoints", &v1.Endpoints{}, &v1.EndpointsList{}, "Endpoints", true},
		{"discovery.k8s.io", "v1", "endpointslices", &discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{}, "EndpointSlice", true},
		{"", "v1", "persistentvolumes", &v1.PersistentVolume{}, &v1.PersistentVolumeList{}, "PersistentVolume", false},
		{"", "v1", "persistentvolumeclaims", &v1.PersistentVolumeClaim{}, &v1.PersistentVolumeClaimList{}, "PersistentVolumeClaim", true},
		{"coordination.k8s.io", "v1", "leases", &coordinationv1.Lease{}, &coordinationv1.LeaseList{}, "Lease", true},
		{"apps", "v1", "deployments", &appsv1.Deployment{}, &appsv1.DeploymentList{}, "Deployment", true},
		{"apps", "v1", "replicasets", &appsv1.ReplicaSet{}, &appsv1.ReplicaSetList{}, "ReplicaSet", true},
		{"storage.k8s.io", "v1", "storageclasses", &storagev1.StorageClass{}, &storagev1.StorageClassList{}, "StorageClass", false},
		{"node.k8s.io", "v1", "runtimeclasses", &nodev1.RuntimeClass{}, &nodev1.RuntimeClassList{}, "RuntimeClass", false},
		{"certificates.k8s.io", "v1", "certificatesigningrequests", &certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{}, "CertificateSigningRequest", false},
		{"events.k8s.io", "v1", "events", &eventsv1.Event{}, &eventsv1.EventList{}, "Event", true},
		{"authentication.k8s.io", "v1", "tokenreviews", &authenticationv1.TokenReview{}, nil, "TokenReview", false},
		{"authorization.k8s.io", "v1", "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{}, nil, "SelfSubjectAccessReview", false},
		{"authorization.k8s.io", "v1", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{}, nil, "SubjectAccessReview", false},
		{"authorization.k8s.io", "v1", "selfsubjectrulesreviews", &authorizationv1.SelfSubjectRulesReview{}, nil, "SelfSubjectRulesReview", false},
		{"authentication.k8s.io", "v1", "selfsubjectreviews", &authenticationv1.SelfSubjectReview{}, nil, "SelfSubjectReview", false},
		{"rbac.authorization.k8s.io", "v1", "roles", &rbacv1.Role{}, &rbacv1.RoleList{}, "Role", true},
		{"rbac.authorization.k8s.io", "v1", "clusterroles", &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{}, "ClusterRole", false},
		{"rbac.authorization.k8s.io", "v1", "rolebindings", &rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{}, "RoleBinding", true},
		{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{}, "ClusterRoleBinding", false},
	}
	reg := New(Config{})
	all := reg.All()
	if got := len(all); got != len(tests) {
		t.Fatalf("All() has %d resources, want %d", got, len(tests))
	}
	for i, tc := range tests {
		r := reg.Get(tc.group, tc.version, tc.plural)
		if r == nil {
			t.Fatalf("Get(%q, %q, %q) = nil", tc.group, tc.version, tc.plural)
		}
		if all[i] != r {
			t.Errorf("All()[%d] is %s, want %s (stable order)", i, all[i].Plural, tc.plural)
		}
		if r.GVK.Group != tc.group || r.GVK.Version != tc.version || r.GVK.Kind != tc.kind {
			t.Errorf("%s: GVK = %v", tc.plural, r.GVK)
		}
		if r.Namespaced != tc.namespaced {
			t.Errorf("%s: Namespaced = %v", tc.plural, r.Namespaced)
		}
		if got := reflect.TypeOf(r.New()); got != reflect.TypeOf(tc.obj) {
			t.Errorf("%s: New() = %v, want %T", tc.plural, got, tc.obj)
		}
		if tc.list == nil {
			if !r.Virtual || r.NewList != nil || !slices.Equal(r.Verbs, []string{"create"}) {
				t.Errorf("%s: want virtual create-only resource without list", tc.plural)
			}
			continue
		}
		if got := reflect.TypeOf(r.NewList()); got != reflect.TypeOf(tc.list) {
			t.Errorf("%s: NewList() = %v, want %T", tc.plural, got, tc.list)
		}
		if r.Virtual || r.FieldSet == nil || r.Table == nil || r.Validate == nil || r.ValidateUpdate == nil {
			t.Errorf("%s: stored resource lacks hooks", tc.plural)
		}
		for _, s := range r.Subresources {
			if SubresourceVerbs[s] == nil {
				t.Errorf("%s/%s: no subresource verbs", tc.plural, s)
			}
		}
	}
	if reg.Get("", "v1", "deployments") != nil || reg.Get("apps", "v1beta1", "deployments") != nil {
		t.Error("Get found a resource that is not served")
	}
}

func TestDiscovery(t *testing.T) {
	reg := New(Config{})
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	tests := []struct {
		r                  *Resource
		singular           string
		short, cats, verbs []string
		subresources       []string
	}{
		{reg.Get("", "v1", "pods"), "pod", []string{"po"}, []string{"all"}, all,
			[]string{"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "resize", "status"}},
		{reg.Get("apps", "v1", "deployments"), "deployment", []string{"deploy"}, []string{"all"}, all, []string{"scale", "status"}},
		{reg.Get("", "v1", "services"), "service", []string{"svc"}, []string{"all"},
			[]string{"create", "delete", "get", "list", "patch", "update", "watch"}, []string{"proxy", "status"}},
		{reg.Get("", "v1", "namespaces"), "namespace", []string{"ns"}, nil,
			[]string{"create", "delete", "get", "list", "patch", "update", "watch"}, []string{"finalize", "status"}},
		{reg.Get("", "v1", "persistentvolumes"), "persistentvolume", []string{"pv"}, nil, all, []string{"status"}},
		{reg.Get("", "v1", "persistentvolumeclaims"), "persistentvolumeclaim", []string{"pvc"}, nil, all, []string{"status"}},
	}
	for _, tc := range tests {
		r := tc.r
		if r.Singular != tc.singular || !slices.Equal(r.ShortNames, tc.short) || !slices.Equal(r.Categories, tc.cats) ||
			!slices.Equal(r.Verbs, tc.verbs) || !slices.Equal(r.Subresources, tc.subresources) {
			t.Errorf("%s: got singular %q short %v categories %v verbs %v subresources %v", r.Plural, r.Singular, r.ShortNames, r.Categories, r.Verbs, r.Subresources)
		}
	}
}

// errorFields lists "type field" for each error, for compact comparisons.
func errorFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func expectErrors(t *testing.T, name string, errs field.ErrorList, want ...string) {
	t.Helper()
	if got := errorFields(errs); !slices.Equal(got, want) {
		t.Errorf("%s: errors %v, want %v\n%v", name, got, want, errs)
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}
}
