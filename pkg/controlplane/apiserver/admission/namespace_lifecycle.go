package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceLifecycle is upstream's plugin of that name: no new objects
// in a missing or terminating namespace. Only creates of namespaced
// objects are checked (not subresource creates such as evictions and
// token requests).
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
}

var _ MutationInterface = (*NamespaceLifecycle)(nil)

// Name is the plugin's upstream name.
func (*NamespaceLifecycle) Name() string { return NamespaceLifecycleName }

// Handles: creates.
func (*NamespaceLifecycle) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Admit refuses a create in a missing or terminating namespace: the
// object's namespace, which the core has set from the URL.
func (p *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || !a.Resource.Namespaced {
		return nil
	}
	m, err := meta.Accessor(a.Object)
	if err != nil {
		return err
	}
	name := m.GetNamespace()
	ns, err := p.Namespaces.GetNamespace(ctx, name)
	if err != nil {
		return err
	}
	if ns.Status.Phase == v1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		return namespaceTerminating(name)
	}
	return nil
}

// namespaceTerminating carries upstream's NamespaceTerminating cause, by
// which controllers (the root CA publisher) tell a namespace going away
// from a failure worth retrying.
func namespaceTerminating(name string) error {
	err := apierrors.NewForbidden(v1.Resource("namespaces"), name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", name))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    v1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", name),
		Field:   "metadata.namespace",
	})
	return err
}
