package apiserver

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// attributes is what the admission plugins see of one write, as upstream's
// admission.Attributes: the operation, the resource and subresource, the
// new object (nil on delete) and the stored one (update, delete).
type attributes struct {
	op          admissionv1.Operation
	res         *registry.Resource
	subresource string
	namespace   string
	name        string // the URL's name; see objectName for creates
	obj, old    runtime.Object
}

func (h *resourceHandler) attrs(op admissionv1.Operation, obj, old runtime.Object) *attributes {
	return &attributes{op: op, res: h.res, subresource: h.ri.Subresource, namespace: h.ri.Namespace, name: h.ri.Name, obj: obj, old: old}
}

// objectName is the name admission errors report: the object's name, its
// generateName before one is drawn, and "Unknown" without an object (a
// delete), as upstream's admission.NewForbidden does.
func (a *attributes) objectName() string {
	if a.obj == nil {
		return "Unknown"
	}
	m, err := meta.Accessor(a.obj)
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

// admitMutating runs the checks upstream makes in its mutating admission
// phase, before defaulting and validation: NodeRestriction.
func (s *Server) admitMutating(ctx context.Context, a *attributes) error {
	u, ok := UserFrom(ctx)
	if !ok {
		return nil // the server's own writes and handler-only tests
	}
	return s.restrictNode(ctx, u, a)
}

// admitValidating runs the checks upstream makes after validation, on the
// final object: PodSecurity. Only creates and updates are checked.
func (s *Server) admitValidating(ctx context.Context, a *attributes) error {
	if a.op != admissionv1.Create && a.op != admissionv1.Update {
		return nil
	}
	return s.checkPodSecurity(ctx, a)
}
