package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// fixture runs the controller against a fake clientset whose /approval
// and /status subresources of certificate signing requests apply the API
// server's own rules (pkg/controlplane/registry), signing with a
// throwaway PKI: its kubelet-serving CA for serving certificates, its
// cluster CA for client certificates.
type fixture struct {
	client *fake.Clientset
	pki    *pki.PKI

	mu        sync.Mutex
	approvals map[string]int // successful /approval writes by request
}

func start(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	p, err := pki.Ensure(t.TempDir(), pki.Options{Hostname: "cp", IPs: []net.IP{}, Logger: ctrltest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{client: ctrltest.NewClientset(objs...), pki: p, approvals: map[string]int{}}
	f.serveSubresources(t)
	f.serveReviews()
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := New(f.client, factory, Config{ServingSigner: &p.KubeletServingCA, ClientSigner: &p.CA}, ctrltest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Start(t, factory, func(ctx context.Context) error { return c.Run(ctx, 1) })
	return f
}

// serveSubresources: updates through certificatesigningrequests/approval
// and /status run the registry's prepare and validate hooks, with the
// API server's resourceVersion check.
func (f *fixture) serveSubresources(t *testing.T) {
	res := registry.New(registry.Config{}).Get("certificates.k8s.io", "v1", "certificatesigningrequests")
	if res == nil {
		t.Fatal("no certificatesigningrequests in the registry")
	}
	var rv atomic.Int64
	rv.Store(1 << 20) // apart from the fake's own
	f.client.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateAction)
		prepare, validate := res.PrepareForStatusUpdate, res.ValidateStatusUpdate
		switch ua.GetSubresource() {
		case "status":
		case "approval":
			prepare, validate = res.PrepareForApprovalUpdate, res.ValidateApprovalUpdate
		default:
			return false, nil, nil
		}
		csr := ua.GetObject().DeepCopyObject().(*certificatesv1.CertificateSigningRequest)
		obj, err := f.client.Tracker().Get(ua.GetResource(), "", csr.Name)
		if err != nil {
			return true, nil, err
		}
		old := obj.(*certificatesv1.CertificateSigningRequest)
		if csr.ResourceVersion != "" && csr.ResourceVersion != old.ResourceVersion {
			return true, nil, apierrors.NewConflict(ua.GetResource().GroupResource(), csr.Name, fmt.Errorf("the object has been modified"))
		}
		prepare(csr, old)
		if errs := validate(csr, old); len(errs) > 0 {
			return true, nil, apierrors.NewInvalid(res.GVK.GroupKind(), csr.Name, errs)
		}
		csr.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		if err := f.client.Tracker().Update(ua.GetResource(), csr, ""); err != nil {
			return true, nil, err
		}
		if ua.GetSubresource() == "approval" {
			f.mu.Lock()
			f.approvals[csr.Name]++
			f.mu.Unlock()
		}
		return true, csr, nil
	})
}

// serveReviews answers subject access reviews as the bootstrap policy
// and the join bindings do: nodes may renew their own client
// certificates, bootstrap tokens' users may request one.
func (f *fixture) serveReviews() {
	f.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		ra := sar.Spec.ResourceAttributes
		if ra != nil && ra.Group == "certificates.k8s.io" && ra.Resource == "certificatesigningrequests" && ra.Verb == "create" {
			sar.Status.Allowed = (ra.Subresource == "selfnodeclient" && slices.Contains(sar.Spec.Groups, "system:nodes")) ||
				(ra.Subresource == "nodeclient" && slices.Contains(sar.Spec.Groups, "system:bootstrappers"))
		}
		return true, sar, nil
	})
}

func (f *fixture) approvalWrites(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.approvals[name]
}

func (f *fixture) create(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
	t.Helper()
	if _, err := f.client.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) get(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	csr, err := f.client.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

// waitIssued waits for the request's certificate and parses it.
func (f *fixture) waitIssued(t *testing.T, name string) (*certificatesv1.CertificateSigningRequest, *x509.Certificate) {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	ctrltest.Eventually(t, name+" issued", func(ctx context.Context) (bool, string) {
		var err error
		csr, err = f.client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(csr.Status.Certificate) > 0, fmt.Sprintf("%+v", csr.Status.Conditions)
	})
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s: certificate is not PEM", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return csr, cert
}

func requestPEM(t *testing.T, cn string, orgs, dns []string, ips ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

var (
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
)

// nodeCSR is a request by node (as the API server stamps the requester).
func nodeCSR(t *testing.T, name, node, signer string, usages []certificatesv1.KeyUsage, dns []string, ips ...string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t, nodeUserPrefix+node, []string{nodesGroup}, dns, ips...),
			SignerName: signer, Usages: usages,
			Username: nodeUserPrefix + node, Groups: []string{nodesGroup, "system:authenticated"},
		},
	}
}

func withIP(name, ip string) *v1.Node {
	return node(name, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip}, v1.NodeAddress{Type: v1.NodeHostName, Address: name})
}

func conditions(csr *certificatesv1.CertificateSigningRequest) string {
	var out []string
	for _, c := range csr.Status.Conditions {
		out = append(out, string(c.Type)+"/"+c.Reason)
	}
	return strings.Join(out, ",")
}

// A node's own serving request is approved once and signed by the
// kubelet-serving CA, its client request by the cluster CA; a request for
// another node's address stays pending.
func TestServingAndClientRequestsSigned(t *testing.T) {
	f := start(t, withIP("n1", "192.0.2.10"), withIP("n2", "192.0.2.20"))
	// Created first: the single worker has looked at it before the others
	// are issued.
	f.create(t, nodeCSR(t, "foreign", "n1", certificatesv1.KubeletServingSignerName, servingUsages, []string{"n1"}, "192.0.2.10", "192.0.2.20"))
	f.create(t, nodeCSR(t, "serving", "n1", certificatesv1.KubeletServingSignerName, servingUsages, []string{"n1"}, "192.0.2.10"))
	f.create(t, nodeCSR(t, "client", "n1", certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages, nil))

	csr, cert := f.waitIssued(t, "serving")
	if got := conditions(csr); got != "Approved/AutoApproved" {
		t.Errorf("serving: conditions %s, want Approved/AutoApproved", got)
	}
	if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.DNSNames, []string{"n1"}) ||
		len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("192.0.2.10")) {
		t.Errorf("serving: subject %v SANs %v %v", cert.Subject, cert.DNSNames, cert.IPAddresses)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("serving: usages %v %v, want digital signature, server auth", cert.KeyUsage, cert.ExtKeyUsage)
	}
	opts := x509.VerifyOptions{DNSName: "192.0.2.10", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	opts.Roots = f.pki.KubeletServingCA.CertPool()
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("serving: does not verify against the kubelet-serving CA: %v", err)
	}
	opts.Roots = f.pki.CertPool()
	if _, err := cert.Verify(opts); err == nil {
		t.Error("serving: verifies against the cluster CA")
	}

	csr, cert = f.waitIssued(t, "client")
	if got := conditions(csr); got != "Approved/AutoApproved" {
		t.Errorf("client: conditions %s", got)
	}
	opts = x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	opts.Roots = f.pki.CertPool()
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("client: does not verify against the cluster CA: %v", err)
	}
	opts.Roots = f.pki.KubeletServingCA.CertPool()
	if _, err := cert.Verify(opts); err == nil {
		t.Error("client: verifies against the kubelet-serving CA")
	}

	if n := f.approvalWrites("serving"); n != 1 {
		t.Errorf("serving: approved %d times, want once", n)
	}
	if got := f.get(t, "foreign"); len(got.Status.Conditions) > 0 || len(got.Status.Certificate) > 0 {
		t.Errorf("request for n2's address: %+v, want it pending", got.Status)
	}
}

// A request the signer's rules refuse, approved by hand, fails
// (SignerValidationFailure) and gets no certificate.
func TestSignerValidationFailure(t *testing.T) {
	f := start(t)
	// A user asks the kubelet-serving signer: never approved automatically.
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "jane-serving"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t, "jane", nil, []string{"jane.example"}),
			SignerName: certificatesv1.KubeletServingSignerName, Usages: servingUsages,
			Username: "jane", Groups: []string{"system:authenticated"},
		},
	}
	f.create(t, csr)
	approve(t, f, csr.Name)
	var got *certificatesv1.CertificateSigningRequest
	ctrltest.Eventually(t, "the request failed", func(ctx context.Context) (bool, string) {
		got = f.get(t, csr.Name)
		return hasCondition(got, certificatesv1.CertificateFailed), conditions(got)
	})
	if c := conditions(got); c != "Approved/KubectlApprove,Failed/SignerValidationFailure" {
		t.Errorf("conditions %s", c)
	}
	if i := slices.IndexFunc(got.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateFailed
	}); !strings.Contains(got.Status.Conditions[i].Message, "common name") {
		t.Errorf("Failed message %q, want the subject's fault", got.Status.Conditions[i].Message)
	}
	if len(got.Status.Certificate) > 0 {
		t.Error("a certificate was issued")
	}
}

// approve approves the request by hand, as kubectl certificate approve.
func approve(t *testing.T, f *fixture, name string) {
	t.Helper()
	csr := f.get(t, name)
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "KubectlApprove",
		LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(), // as the API server stamps them
	})
	if _, err := f.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(t.Context(), name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A serving request whose Node does not exist yet is approved when the
// Node appears with the address.
func TestServingRequestWaitsForItsNode(t *testing.T) {
	f := start(t, withIP("n1", "192.0.2.10"))
	f.create(t, nodeCSR(t, "n2-serving", "n2", certificatesv1.KubeletServingSignerName, servingUsages, []string{"n2"}, "192.0.2.20"))
	f.create(t, nodeCSR(t, "n1-serving", "n1", certificatesv1.KubeletServingSignerName, servingUsages, []string{"n1"}, "192.0.2.10"))
	f.waitIssued(t, "n1-serving")
	if got := f.get(t, "n2-serving"); len(got.Status.Conditions) > 0 {
		t.Fatalf("request of a node that does not exist: %s, want it pending", conditions(got))
	}

	if _, err := f.client.CoreV1().Nodes().Create(t.Context(), withIP("n2", "192.0.2.20"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csr, cert := f.waitIssued(t, "n2-serving")
	if got := conditions(csr); got != "Approved/AutoApproved" {
		t.Errorf("conditions %s", got)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: f.pki.KubeletServingCA.CertPool(), DNSName: "n2",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("does not verify against the kubelet-serving CA: %v", err)
	}
}

// A request approved already (by hand) is signed, not approved again.
func TestApprovedRequestNotApprovedAgain(t *testing.T) {
	csr := nodeCSR(t, "approved", "n1", certificatesv1.KubeletServingSignerName, servingUsages, []string{"n1"}, "192.0.2.10")
	csr.ResourceVersion = "1" // as stored
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "KubectlApprove",
		// Approved just now: with no times the cleaner would see a request
		// issued long ago and delete it once it has its certificate.
		LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	f := start(t, withIP("n1", "192.0.2.10"), csr)
	got, _ := f.waitIssued(t, "approved")
	if c := conditions(got); c != "Approved/KubectlApprove" {
		t.Errorf("conditions %s, want only the first approval", c)
	}
	if n := f.approvalWrites("approved"); n != 0 {
		t.Errorf("approved %d more times", n)
	}
}

// A bootstrap token's user gets a node client certificate signed by the
// cluster CA; a user who may not (no nodeclient) stays pending.
func TestBootstrapClientRequest(t *testing.T) {
	f := start(t)
	boot := nodeCSR(t, "node-csr-boot", "new", certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages, nil)
	boot.Spec.Username, boot.Spec.Groups = "system:bootstrap:abcdef", []string{"system:bootstrappers", "system:authenticated"}
	jane := nodeCSR(t, "node-csr-jane", "new", certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages, nil)
	jane.Spec.Username, jane.Spec.Groups = "jane", []string{"system:authenticated"}
	f.create(t, jane) // first: the single worker has decided it before boot is issued
	f.create(t, boot)
	csr, cert := f.waitIssued(t, boot.Name)
	if got := conditions(csr); got != "Approved/AutoApproved" {
		t.Errorf("conditions %s", got)
	}
	if i := slices.IndexFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved
	}); csr.Status.Conditions[i].Message != "Auto approving kubelet client certificate after SubjectAccessReview." {
		t.Errorf("message %q", csr.Status.Conditions[i].Message)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: f.pki.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("does not verify against the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:new" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v", cert.Subject)
	}
	if got := f.get(t, jane.Name); len(got.Status.Conditions) > 0 || len(got.Status.Certificate) > 0 {
		t.Errorf("jane's request: %+v, want it pending", got.Status)
	}
}
