package apiserver

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/admission"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// stampRequester records who asked for a certificate, as upstream's
// CertificateSigningRequest strategy does in PrepareForCreate: signers
// and approvers trust spec.username and spec.groups, never what the
// client wrote there. It is no admission plugin; it runs here, on the
// write path before admission, because the registry's PrepareForCreate
// gets no request context (the user). Without a user (the server's own
// writes) nothing is stamped.
func stampRequester(ctx context.Context, a *admission.Attributes) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok || a.Operation != admissionv1.Create {
		return
	}
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Extra = u.Name, u.UID, nil
	if len(u.Extra) > 0 {
		csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			csr.Spec.Extra[k] = certificatesv1.ExtraValue(v)
		}
	}
	csr.Spec.Groups = append([]string(nil), u.Groups...)
}
