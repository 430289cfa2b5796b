package admission

import (
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Attributes is what the admission plugins see of one write, as
// upstream's admission.Attributes: the operation, the resource and
// subresource, the new object (nil on delete) and the stored one
// (update, delete). The user is the request context's (request.UserFrom).
type Attributes struct {
	Operation   admissionv1.Operation
	Resource    *registry.Resource
	Subresource string
	Namespace   string // the URL's namespace
	Name        string // the URL's name; see ObjectName for creates
	Object      runtime.Object
	OldObject   runtime.Object
}

// GroupResource is the resource's group and plural.
func (a *Attributes) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: a.Resource.GVK.Group, Resource: a.Resource.Plural}
}

// ObjectName is the name admission errors report: the object's name, its
// generateName before one is drawn, and "Unknown" without an object (a
// delete), as upstream's admission.NewForbidden does.
func (a *Attributes) ObjectName() string {
	if a.Object == nil {
		return "Unknown"
	}
	m, err := meta.Accessor(a.Object)
	if err != nil {
		return "Unknown"
	}
	if m.GetName() != "" {
		return m.GetName()
	}
	if m.GetGenerateName() != "" {
		return m.GetGenerateName()
	}
	return "Unknown"
}

// forbidden is admission.NewForbidden: a 403 naming the object.
func forbidden(a *Attributes, format string, args ...any) error {
	return apierrors.NewForbidden(a.GroupResource(), a.ObjectName(), fmt.Errorf(format, args...))
}
