package certificates

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStale(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(typ certificatesv1.RequestConditionType, at metav1.Time) []certificatesv1.CertificateSigningRequestCondition {
		return []certificatesv1.CertificateSigningRequestCondition{{Type: typ, Status: v1.ConditionTrue, LastUpdateTime: at}}
	}
	csr := func(created metav1.Time, conds []certificatesv1.CertificateSigningRequestCondition, cert []byte) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
			Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: cert},
		}
	}
	issued := []byte("issued") // not PEM: the expiry check passes over it
	for _, c := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		{"pending an hour", csr(ago(time.Hour), nil, nil), false},
		{"pending two days", csr(ago(48*time.Hour), nil, nil), true},
		{"pending, creation time unknown", csr(metav1.Time{}, nil, nil), false},
		{"approved, waiting for the signer", csr(ago(48*time.Hour), cond(certificatesv1.CertificateApproved, ago(2*time.Hour)), nil), false},
		{"issued a minute ago", csr(ago(time.Hour), cond(certificatesv1.CertificateApproved, ago(time.Minute)), issued), false},
		{"issued two hours ago", csr(ago(3*time.Hour), cond(certificatesv1.CertificateApproved, ago(2*time.Hour)), issued), true},
		{"denied a minute ago", csr(ago(time.Hour), cond(certificatesv1.CertificateDenied, ago(time.Minute)), nil), false},
		{"denied two hours ago", csr(ago(3*time.Hour), cond(certificatesv1.CertificateDenied, ago(2*time.Hour)), nil), true},
		{"failed two hours ago", csr(ago(3*time.Hour), cond(certificatesv1.CertificateFailed, ago(2*time.Hour)), nil), true},
	} {
		if got, why := stale(c.csr, now); got != c.want {
			t.Errorf("%s: stale = %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}
