package certificates

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
)

// The usage sets a kubelet client request may have, exactly
// (k8s.io/kubernetes pkg/apis/certificates ValidateKubeletClientCSR): key
// encipherment only for RSA keys.
var (
	kubeletClientUsages      = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	kubeletClientUsagesNoRSA = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
)

// clientRecognizer is one of kube-controller-manager's csrapproving
// recognizers (pkg/controller/certificates/approver/sarapprove.go): a
// request it recognizes is approved when its requester may create the
// subresource of certificatesigningrequests.
type clientRecognizer struct {
	subresource string
	recognize   func(*certificatesv1.CertificateSigningRequest, *x509.CertificateRequest) bool
	message     string
}

// clientRecognizers are upstream's, in its order: a node renewing its own
// client certificate, then any node client certificate (a bootstrap
// token's requester).
var clientRecognizers = []clientRecognizer{
	{"selfnodeclient", isSelfNodeClientCert, "Auto approving self kubelet client certificate after SubjectAccessReview."},
	{"nodeclient", isNodeClientCert, "Auto approving kubelet client certificate after SubjectAccessReview."},
}

func isNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		validateKubeletClient(req, csr.Spec.Usages) == nil
}

func isSelfNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClientCert(csr, req)
}

// validateKubeletClient is upstream's ValidateKubeletClientCSR: O exactly
// system:nodes, no SANs, CN system:node:<name>, usages exactly one of the
// kubelet client sets.
func validateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if err := checkKubeletClient(req); err != nil {
		return err
	}
	got := sets.New(usages...)
	if !got.Equal(kubeletClientUsages) && !got.Equal(kubeletClientUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletClientUsages))
	}
	return nil
}

// Authorizer answers whether the request's requester may create the
// subresource of certificatesigningrequests (a SubjectAccessReview).
type Authorizer func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error)

// SubjectAccessReviewer is the Authorizer that asks the API server, as
// upstream's approver does.
func SubjectAccessReviewer(client kubernetes.Interface) Authorizer {
	return func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range csr.Spec.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: certificatesv1.GroupName, Version: "*", Resource: "certificatesigningrequests",
				Subresource: subresource, Verb: "create",
			},
		}}
		got, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("subject access review for %s: %w", csr.Name, err)
		}
		return got.Status.Allowed, nil
	}
}

// errNotRecognized: no recognizer knows the request.
var errNotRecognized = errors.New("not a kubelet client certificate request")

// clientApproval decides a kubernetes.io/kube-apiserver-client-kubelet
// request as upstream's sarapprove: the first recognizer whose review
// allows it approves it (msg); none leaves it pending (why).
func clientApproval(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, authorize Authorizer) (ok bool, msg, why string, err error) {
	var tried []string
	for _, r := range clientRecognizers {
		if !r.recognize(csr, req) {
			continue
		}
		tried = append(tried, r.subresource)
		allowed, err := authorize(ctx, csr, r.subresource)
		if err != nil {
			return false, "", "", err
		}
		if allowed {
			return true, r.message, "", nil
		}
	}
	if len(tried) == 0 {
		why := errNotRecognized.Error()
		if err := validateKubeletClient(req, csr.Spec.Usages); err != nil {
			why += ": " + err.Error()
		}
		return false, "", why, nil
	}
	return false, "", fmt.Sprintf("recognized as %s but subject access review was not approved", strings.Join(slices.Clip(tried), ", ")), nil
}
