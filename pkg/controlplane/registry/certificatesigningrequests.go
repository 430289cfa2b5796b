package registry

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CertificateSigningRequests (certificates.k8s.io/v1), as upstream's
// pkg/registry/certificates/certificates: the spec is fixed at create
// (the API server stamps the requester into it), signers write
// status.certificate and Failed conditions through /status, approvers
// write Approved or Denied through /approval.
func (b *builder) certificateSigningRequests() *Resource {
	return &Resource{
		GVK:          certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		Plural:       "certificatesigningrequests",
		Singular:     "certificatesigningrequest",
		ShortNames:   []string{"csr"},
		Verbs:        allVerbs,
		Subresources: []string{"status", "approval"},
		New:          func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:      func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },

		PrepareForCreate: hook(func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Status = certificatesv1.CertificateSigningRequestStatus{}
		}),
		PrepareForUpdate: hook2(func(csr, old *certificatesv1.CertificateSigningRequest) {
			csr.Spec, csr.Status = old.Spec, old.Status
		}),
		PrepareForStatusUpdate:   hook2(prepareCSRStatusUpdate),
		PrepareForApprovalUpdate: hook2(b.prepareCSRApprovalUpdate),
		Validate:                 check(validateCSR),
		ValidateUpdate:           check2(validateCSRUpdate),
		ValidateStatusUpdate:     check2(validateCSRUpdate),
		ValidateApprovalUpdate:   check2(validateCSRUpdate),
		FieldSet: fieldSet(false, func(csr *certificatesv1.CertificateSigningRequest) fields.Set {
			return fields.Set{"spec.signerName": csr.Spec.SignerName}
		}),
		Table: table(csrColumns, b.csrRow),
	}
}

// prepareCSRStatusUpdate keeps the spec and the approval: a signer
// writes the certificate and Failed, never Approved or Denied.
func prepareCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) {
	csr.Spec = old.Spec
	csr.Status.Conditions = mergeConditions(old.Status.Conditions, csr.Status.Conditions)
}

// prepareCSRApprovalUpdate keeps everything but the approval conditions.
func (b *builder) prepareCSRApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) {
	csr.Spec = old.Spec
	conds := mergeConditions(csr.Status.Conditions, old.Status.Conditions)
	csr.Status = certificatesv1.CertificateSigningRequestStatus{Certificate: old.Status.Certificate, Conditions: conds}
	now := b.now()
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
	}
}

// mergeConditions takes the Approved and Denied conditions from approval
// and the others from rest.
func mergeConditions(approval, rest []certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range approval {
		if isApprovalCondition(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range rest {
		if !isApprovalCondition(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func isApprovalCondition(t certificatesv1.RequestConditionType) bool {
	return t == certificatesv1.CertificateApproved || t == certificatesv1.CertificateDenied
}

// Upstream's key usages (certificates.k8s.io/v1 KeyUsage).
var csrKeyUsages = sets.New[string](
	"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
	"ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
)

// minExpirationSeconds is upstream's floor for spec.expirationSeconds.
const minExpirationSeconds = 600

// validateCSRName accepts any name, as upstream's
// ValidateCertificateRequestName ("We don't care what you call your
// certificate requests"): the kubelet's node-csr-<base64url digest> has
// upper case and underscores. The API server's path rules still apply.
func validateCSRName(string, bool) []string { return nil }

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := validateMeta(&csr.ObjectMeta, false, validateCSRName)
	spec := field.NewPath("spec")
	if _, err := ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "", err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	seen := sets.New[string]()
	for i, u := range csr.Spec.Usages {
		p := spec.Child("usages").Index(i)
		switch {
		case !csrKeyUsages.Has(string(u)):
			errs = append(errs, field.NotSupported(p, u, sets.List(csrKeyUsages)))
		case seen.Has(string(u)):
			errs = append(errs, field.Duplicate(p, u))
		}
		seen.Insert(string(u))
	}
	errs = append(errs, validateSignerName(csr.Spec.SignerName, spec.Child("signerName"))...)
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *e, fmt.Sprintf("may not specify a duration less than %d seconds", minExpirationSeconds)))
	}
	return append(errs, validateCSRStatus(csr)...)
}

// validateSignerName: "<DNS subdomain>/<path>", as upstream.
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(domain) {
		errs = append(errs, field.Invalid(p, name, "the domain portion of a signerName "+msg))
	}
	return errs
}

func validateCSRStatus(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status", "conditions")
	types := sets.New[certificatesv1.RequestConditionType]()
	for i, c := range csr.Status.Conditions {
		cp := p.Index(i)
		switch {
		case c.Type == "":
			errs = append(errs, field.Required(cp.Child("type"), ""))
		case types.Has(c.Type):
			errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
		}
		types.Insert(c.Type)
		if isApprovalCondition(c.Type) && c.Status != v1.ConditionTrue {
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []string{string(v1.ConditionTrue)}))
		}
	}
	if types.Has(certificatesv1.CertificateApproved) && types.Has(certificatesv1.CertificateDenied) {
		errs = append(errs, field.Invalid(p, csr.Status.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(csr.Status.Certificate) > 0 {
		cp := field.NewPath("status", "certificate")
		if !types.Has(certificatesv1.CertificateApproved) {
			errs = append(errs, field.Forbidden(cp, "may only be set when the request is approved"))
		} else if err := validCertificatePEM(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(cp, "<certificate data>", err.Error()))
		}
	}
	return errs
}

// validateCSRUpdate: approval, denial and an issued certificate are final.
func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := validateMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateCSRStatus(csr)...)
	p := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if hasCSRCondition(old, t) && !hasCSRCondition(csr, t) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if len(old.Status.Certificate) > 0 && string(old.Status.Certificate) != string(csr.Status.Certificate) {
		errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
	}
	return errs
}

func hasCSRCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// ParseCSR decodes the PEM "CERTIFICATE REQUEST" block and checks its
// signature.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	return csr, nil
}

func validCertificatePEM(data []byte) error {
	n := 0
	for rest := data; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

var csrColumns = []metav1.TableColumnDefinition{
	nameColumn,
	ageColumn,
	col("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
	col("Requestor", "string", "Name of the user that requested the CSR"),
	col("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
	col("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
}

func (b *builder) csrRow(csr *certificatesv1.CertificateSigningRequest) []interface{} {
	requested := "<none>"
	if e := csr.Spec.ExpirationSeconds; e != nil {
		requested = duration.HumanDuration(time.Duration(*e) * time.Second)
	}
	return []interface{}{csr.Name, b.age(csr.ObjectMeta), csr.Spec.SignerName, csr.Spec.Username, requested, csrCondition(csr)}
}

// csrCondition is kubectl's CONDITION: the true conditions joined, with
// Issued once a certificate is there, Pending when there is nothing.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, c := range csr.Status.Conditions {
		if c.Status == v1.ConditionTrue || c.Status == "" {
			parts = append(parts, string(c.Type))
		}
	}
	if len(csr.Status.Certificate) > 0 {
		parts = append(parts, "Issued")
	}
	if len(parts) == 0 {
		return "Pending"
	}
	return strings.Join(parts, ",")
}
