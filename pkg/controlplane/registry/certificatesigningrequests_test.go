package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// newCSRPair is a stored request (created through the create hooks) and
// a certificate PEM a signer could issue for it.
func newCSRPair(t *testing.T) (*certificatesv1.CertificateSigningRequest, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "req", ResourceVersion: "1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
		// A client may not create it approved or issued.
		Status: certificatesv1.CertificateSigningRequestStatus{
			Conditions:  []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved)},
			Certificate: []byte("x"),
		},
	}
	if errs := create(certificateSigningRequests, csr); errs != nil {
		t.Fatal(errs)
	}
	if len(csr.Status.Conditions) > 0 || len(csr.Status.Certificate) > 0 {
		t.Fatalf("created with status %+v", csr.Status)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jane"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return csr, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
}

func condition(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: v1.ConditionTrue, Reason: "Test"}
}

func conditionTypes(csr *certificatesv1.CertificateSigningRequest) []certificatesv1.RequestConditionType {
	var out []certificatesv1.RequestConditionType
	for _, c := range csr.Status.Conditions {
		out = append(out, c.Type)
	}
	return out
}

// with returns a copy of csr with the given conditions and certificate.
func with(csr *certificatesv1.CertificateSigningRequest, cert []byte, types ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	out := csr.DeepCopy()
	out.Status.Conditions = nil
	for _, t := range types {
		out.Status.Conditions = append(out.Status.Conditions, condition(t))
	}
	out.Status.Certificate = cert
	return out
}

// statusUpdate and approvalUpdate run an update through the subresource:
// prepare, then validate.
func statusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	certificateSigningRequests.PrepareForStatusUpdate(csr, old)
	return certificateSigningRequests.ValidateStatusUpdate(csr, old)
}

func approvalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	certificateSigningRequests.PrepareForApprovalUpdate(csr, old)
	return certificateSigningRequests.ValidateApprovalUpdate(csr, old)
}

func TestCSRStatusCannotApprove(t *testing.T) {
	const (
		approved = certificatesv1.CertificateApproved
		denied   = certificatesv1.CertificateDenied
		failed   = certificatesv1.CertificateFailed
	)
	pending, cert := newCSRPair(t)
	isApproved := with(pending, nil, approved)

	// A signer adds neither Approved nor Denied.
	for _, add := range []certificatesv1.RequestConditionType{approved, denied} {
		csr := with(pending, nil, add, failed)
		expectErrors(t, "status adds "+string(add), statusUpdate(csr, pending))
		if got := conditionTypes(csr); len(got) != 1 || got[0] != failed {
			t.Errorf("status adds %s: conditions %v, want only Failed", add, got)
		}
	}
	// Nor removes them.
	csr := with(isApproved, cert)
	expectErrors(t, "status drops Approved", statusUpdate(csr, isApproved))
	if got := conditionTypes(csr); len(got) != 1 || got[0] != approved || string(csr.Status.Certificate) != string(cert) {
		t.Errorf("status drops Approved: conditions %v certificate %d bytes, want Approved kept, the certificate set", got, len(csr.Status.Certificate))
	}
	// Without Approved there is no certificate.
	csr = with(pending, cert)
	expectErrors(t, "certificate on a pending request", statusUpdate(csr, pending), "FieldValueForbidden status.certificate")
	csr = with(pending, cert, denied)
	deniedOld := with(pending, nil, denied)
	expectErrors(t, "certificate on a denied request", statusUpdate(csr, deniedOld), "FieldValueForbidden status.certificate")
	// Failed stays once set.
	failedOld := with(isApproved, nil, approved, failed)
	csr = with(isApproved, nil, approved)
	expectErrors(t, "status drops Failed", statusUpdate(csr, failedOld), "FieldValueForbidden status.conditions")
	// An issued certificate stays.
	issued := with(isApproved, cert, approved)
	_, other := newCSRPair(t)
	csr = with(isApproved, other, approved)
	expectErrors(t, "status replaces the certificate", statusUpdate(csr, issued), "FieldValueForbidden status.certificate")
}

func TestCSRApproval(t *testing.T) {
	const (
		approved = certificatesv1.CertificateApproved
		denied   = certificatesv1.CertificateDenied
		failed   = certificatesv1.CertificateFailed
	)
	pending, cert := newCSRPair(t)
	isApproved := with(pending, nil, approved)
	isDenied := with(pending, nil, denied)

	// An approver sets Approved, never the certificate nor Failed.
	csr := with(pending, cert, approved, failed)
	expectErrors(t, "approve", approvalUpdate(csr, pending))
	if got := conditionTypes(csr); len(got) != 1 || got[0] != approved || len(csr.Status.Certificate) > 0 {
		t.Errorf("approve with a certificate and Failed: conditions %v certificate %d bytes, want Approved only", got, len(csr.Status.Certificate))
	}
	if c := csr.Status.Conditions[0]; c.LastUpdateTime.IsZero() || c.LastTransitionTime.IsZero() {
		t.Errorf("approval times not set: %+v", c)
	}
	// It keeps the issued certificate as it is, whatever it sends.
	issued := with(isApproved, cert, approved)
	for _, sent := range [][]byte{nil, []byte("other")} {
		csr = with(isApproved, sent, approved)
		expectErrors(t, "approval with a certificate", approvalUpdate(csr, issued))
		if string(csr.Status.Certificate) != string(cert) {
			t.Errorf("approval with certificate %q changed it", sent)
		}
	}
	// It keeps Failed.
	failedOld := with(isApproved, nil, approved, failed)
	csr = with(isApproved, nil, approved)
	expectErrors(t, "approval without Failed", approvalUpdate(csr, failedOld))
	if got := conditionTypes(csr); len(got) != 2 || got[1] != failed {
		t.Errorf("approval without Failed: conditions %v, want Failed kept", got)
	}

	cases := []struct {
		name     string
		old, new *certificatesv1.CertificateSigningRequest
		want     []string
	}{
		{"approve and deny", pending, with(pending, nil, approved, denied), []string{"FieldValueInvalid status.conditions"}},
		{"deny an approved one", isApproved, with(pending, nil, approved, denied), []string{"FieldValueInvalid status.conditions"}},
		{"approve a denied one", isDenied, with(pending, nil, denied, approved), []string{"FieldValueInvalid status.conditions"}},
		{"remove Approved", isApproved, with(pending, nil), []string{"FieldValueForbidden status.conditions"}},
		{"replace Approved by Denied", isApproved, with(pending, nil, denied), []string{"FieldValueForbidden status.conditions"}},
		{"remove Denied", isDenied, with(pending, nil), []string{"FieldValueForbidden status.conditions"}},
		{"approve twice", isApproved, with(pending, nil, approved, approved), []string{"FieldValueDuplicate status.conditions[1].type"}},
		{"approved, not true", pending, func() *certificatesv1.CertificateSigningRequest {
			c := with(pending, nil, approved)
			c.Status.Conditions[0].Status = v1.ConditionFalse
			return c
		}(), []string{"FieldValueNotSupported status.conditions[0].status"}},
	}
	for _, c := range cases {
		expectErrors(t, c.name, approvalUpdate(c.new, c.old), c.want...)
	}
}
