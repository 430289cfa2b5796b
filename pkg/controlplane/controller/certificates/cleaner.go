package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The cleaner's deadlines and period, kube-controller-manager's csrcleaner
// (pkg/controller/certificates/cleaner): requests are kept long enough to
// be picked up, not forever.
const (
	issuedExpiration  = time.Hour      // approved and issued, after approval
	deniedExpiration  = time.Hour      // denied or failed, after that
	pendingExpiration = 24 * time.Hour // neither, after creation
	cleanPeriod       = time.Hour
)

// stale says whether the request is past its deadline at now, and why.
func stale(csr *certificatesv1.CertificateSigningRequest, now time.Time) (bool, string) {
	if len(csr.Status.Certificate) > 0 && certificateExpired(csr.Status.Certificate, now) {
		return true, "its certificate expired"
	}
	for _, c := range csr.Status.Conditions {
		at := c.LastUpdateTime.Time
		if at.IsZero() {
			at = c.LastTransitionTime.Time
		}
		switch {
		case c.Type == certificatesv1.CertificateApproved && len(csr.Status.Certificate) > 0 && now.Sub(at) > issuedExpiration:
			return true, "issued more than an hour ago"
		case (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && now.Sub(at) > deniedExpiration:
			return true, "denied or failed more than an hour ago"
		}
	}
	// A zero creation time is unknown (never from the API server), not old.
	if pending(csr) && !csr.CreationTimestamp.IsZero() && now.Sub(csr.CreationTimestamp.Time) > pendingExpiration {
		return true, "pending for more than a day"
	}
	return false, ""
}

func certificateExpired(pemBytes []byte, now time.Time) bool {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return err == nil && now.After(cert.NotAfter)
}

// runCleaner deletes stale requests every cleanPeriod until ctx ends.
func (c *Controller) runCleaner(ctx context.Context) {
	t := time.NewTicker(cleanPeriod)
	defer t.Stop()
	for {
		c.clean(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Controller) clean(ctx context.Context, now time.Time) {
	list, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range list {
		ok, why := stale(csr, now)
		if !ok {
			continue
		}
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
		switch {
		case err == nil:
			c.log.Info("deleted certificate signing request", "csr", csr.Name, "reason", why)
		case !apierrors.IsNotFound(err):
			c.log.Warn("delete certificate signing request", "csr", csr.Name, "err", err)
		}
	}
}
