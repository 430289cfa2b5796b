package apiserver

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
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

// admissionForbidden is admission.NewForbidden: a 403 naming the object.
func admissionForbidden(a *attributes, format string, args ...any) error {
	return apierrors.NewForbidden(groupResource(a.res), a.objectName(), fmt.Errorf(format, args...))
}

// admitMutating runs the checks upstream makes in its mutating admission
// phase, before defaulting and validation: NodeRestriction.
func (s *Server) admitMutating(ctx context.Context, a *attributes) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil // the server's own writes and handler-only tests
	}
	stampRequester(u, a)
	return s.restrictNode(ctx, u, a)
}

// stampRequester records who asked for a certificate, as upstream's
// CertificateSigningRequest strategy does: signers and approvers trust
// spec.username and spec.groups, never what the client wrote there.
func stampRequester(u request.User, a *attributes) {
	csr, ok := a.obj.(*certificatesv1.CertificateSigningRequest)
	if !ok || a.op != admissionv1.Create {
		return
	}
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Extra = u.Name, "", nil
	csr.Spec.Groups = append([]string(nil), u.Groups...)
}

// admitValidating runs the checks upstream makes after validation, on the
// final object: ServiceAccount (on ephemeral containers) and PodSecurity.
// Only creates and updates are checked.
func (s *Server) admitValidating(ctx context.Context, a *attributes) error {
	if a.op != admissionv1.Create && a.op != admissionv1.Update {
		return nil
	}
	if err := s.validateServiceAccountEphemeral(ctx, a); err != nil {
		return err
	}
	return s.checkPodSecurity(ctx, a)
}
