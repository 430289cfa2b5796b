package admission

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// fakeReaders serves every reader interface from fixed objects.
type fakeReaders struct {
	namespaces []*v1.Namespace
	classes    []*storagev1.StorageClass
	runtimes   []*nodev1.RuntimeClass
}

func (f fakeReaders) GetNamespace(_ context.Context, name string) (*v1.Namespace, error) {
	for _, ns := range f.namespaces {
		if ns.Name == name {
			return ns, nil
		}
	}
	return nil, apierrors.NewNotFound(v1.Resource("namespaces"), name)
}

func (fakeReaders) GetServiceAccount(_ context.Context, _, name string) (*v1.ServiceAccount, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
}

func (fakeReaders) GetPod(_ context.Context, _, name string) (*v1.Pod, error) {
	return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
}

func (fakeReaders) GetNode(_ context.Context, name string) (*v1.Node, error) {
	return nil, apierrors.NewNotFound(v1.Resource("nodes"), name)
}

func (fakeReaders) ListPods(context.Context, string) ([]*v1.Pod, error) { return nil, nil }

func (f fakeReaders) ListStorageClasses(context.Context) ([]*storagev1.StorageClass, error) {
	return f.classes, nil
}

func (f fakeReaders) GetRuntimeClass(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
	for _, rc := range f.runtimes {
		if rc.Name == name {
			return rc, nil
		}
	}
	return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
}

func newTestChain(t *testing.T, f fakeReaders) *Chain {
	t.Helper()
	c, err := New(Dependencies{Namespaces: f, ServiceAccounts: f, Pods: f, Nodes: f, PodLister: f, StorageClasses: f, RuntimeClasses: f,
		NameSuffix: func() string { return "abcde" }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChainOrder: the plugins in upstream's order (AllOrderedPlugins),
// as doc.go documents it, and each phase's plugins in that order.
func TestChainOrder(t *testing.T) {
	c := newTestChain(t, fakeReaders{})
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"all", c.Names(), []string{"NamespaceLifecycle", "ServiceAccount", "NodeRestriction", "PodSecurity", "DefaultTolerationSeconds", "DefaultStorageClass", "RuntimeClass"}},
		{"mutating", c.MutatingNames(), []string{"NamespaceLifecycle", "ServiceAccount", "NodeRestriction", "DefaultTolerationSeconds", "DefaultStorageClass", "RuntimeClass"}},
		{"validating", c.ValidatingNames(), []string{"ServiceAccount", "PodSecurity", "RuntimeClass"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// recorder is a plugin that notes its calls and may refuse.
type recorder struct {
	name  string
	ops   []admissionv1.Operation
	calls *[]string
	err   error
}

func (r *recorder) Name() string                             { return r.name }
func (r *recorder) Handles(op admissionv1.Operation) bool    { return slices.Contains(r.ops, op) }
func (r *recorder) Admit(context.Context, *Attributes) error { return r.note("admit") }
func (r *recorder) note(phase string) error {
	*r.calls = append(*r.calls, phase+" "+r.name)
	return r.err
}

type validatingRecorder struct{ *recorder }

func (r validatingRecorder) Validate(context.Context, *Attributes) error { return r.note("validate") }

// TestChainPhases: each phase runs its plugins in order, only for the
// operations they handle, and stops at the first refusal.
func TestChainPhases(t *testing.T) {
	var calls []string
	refused := errors.New("refused")
	both := []admissionv1.Operation{admissionv1.Create, admissionv1.Update}
	c := NewChain(
		&recorder{name: "a", ops: both, calls: &calls},
		validatingRecorder{&recorder{name: "b", ops: []admissionv1.Operation{admissionv1.Update}, calls: &calls}},
		validatingRecorder{&recorder{name: "c", ops: both, calls: &calls}},
	)
	a := &Attributes{Operation: admissionv1.Create}
	if err := c.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if want := []string{"admit a", "admit c", "validate c"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	calls = nil
	c = NewChain(&recorder{name: "a", ops: both, calls: &calls, err: refused}, &recorder{name: "b", ops: both, calls: &calls})
	if err := c.Admit(context.Background(), a); !errors.Is(err, refused) || !slices.Equal(calls, []string{"admit a"}) {
		t.Errorf("refusal: %v, calls %v", err, calls)
	}
}

var podsResource = &registry.Resource{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Plural: "pods", Namespaced: true}

// TestNamespaceLifecycle: creates in a missing or terminating namespace
// are refused, the latter with upstream's cause; subresource creates pass.
func TestNamespaceLifecycle(t *testing.T) {
	gone := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	p := &NamespaceLifecycle{Namespaces: fakeReaders{namespaces: []*v1.Namespace{gone, {ObjectMeta: metav1.ObjectMeta{Name: "ok"}}}}}
	create := func(ns, sub string) error {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
		return p.Admit(context.Background(), &Attributes{Operation: admissionv1.Create, Resource: podsResource, Subresource: sub, Namespace: ns, Object: pod})
	}
	if err := create("ok", ""); err != nil {
		t.Errorf("live namespace: %v", err)
	}
	if err := create("missing", ""); !apierrors.IsNotFound(err) {
		t.Errorf("missing namespace: %v", err)
	}
	err := create("gone", "")
	if !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) ||
		err.Error() != `namespaces "gone" is forbidden: unable to create new content in namespace gone because it is being terminated` {
		t.Errorf("terminating namespace: %v", err)
	}
	if err := create("gone", "eviction"); err != nil {
		t.Errorf("subresource create: %v", err)
	}
}

// TestDefaultStorageClassChoice: the newest default wins, then the first
// name; a claim with a class (even "") keeps it.
func TestDefaultStorageClassChoice(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	class := func(name string, def bool, created metav1.Time) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if def {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		return sc
	}
	earlier := metav1.NewTime(now.Add(-time.Hour))
	p := &DefaultStorageClass{StorageClasses: fakeReaders{classes: []*storagev1.StorageClass{
		class("old", true, earlier), class("zz", true, now), class("aa", true, now), class("plain", false, now)}}}
	claim := &v1.PersistentVolumeClaim{}
	if err := p.Admit(context.Background(), &Attributes{Operation: admissionv1.Create, Object: claim}); err != nil {
		t.Fatal(err)
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "aa" {
		t.Errorf("class %v, want aa", claim.Spec.StorageClassName)
	}
	empty := ""
	claim = &v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &empty}}
	_ = p.Admit(context.Background(), &Attributes{Operation: admissionv1.Create, Object: claim})
	if *claim.Spec.StorageClassName != "" {
		t.Errorf("explicit empty class changed to %q", *claim.Spec.StorageClassName)
	}
}
