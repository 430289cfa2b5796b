package apiserver

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/admission"
)

// newAdmission builds the admission chain (package admission) on the
// server's stores.
func (s *Server) newAdmission() (*admission.Chain, error) {
	r := storeReaders{s}
	return admission.New(admission.Dependencies{
		Namespaces: r, ServiceAccounts: r, Pods: r, Nodes: r, PodLister: r, StorageClasses: r, RuntimeClasses: r,
		NameSuffix: generateNameSuffix,
	})
}

func (h *resourceHandler) attrs(op admissionv1.Operation, obj, old runtime.Object) *admission.Attributes {
	return &admission.Attributes{Operation: op, Resource: h.res, Subresource: h.ri.Subresource,
		Namespace: h.ri.Namespace, Name: h.ri.Name, Object: obj, OldObject: old}
}

// admitMutating is a write's mutating step, before defaulting and
// validation: the requester of a new CertificateSigningRequest is
// recorded (the CSR strategy's work upstream, see stampRequester), then
// the mutating admission plugins run.
func (s *Server) admitMutating(ctx context.Context, a *admission.Attributes) error {
	stampRequester(ctx, a)
	return s.admission.Admit(ctx, a)
}

// admitValidating runs the validating admission plugins on the final
// object, after validation.
func (s *Server) admitValidating(ctx context.Context, a *admission.Attributes) error {
	return s.admission.Validate(ctx, a)
}
