package clientcert

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// signer is a fake clientset whose created kube-apiserver-client-kubelet
// requests are approved and signed at once by a throwaway CA, valid from
// now() for validity; it records the requests.
type signer struct {
	client   *fake.Clientset
	caKey    *ecdsa.PrivateKey
	ca       *x509.Certificate
	caPEM    []byte
	validity time.Duration

	mu   sync.Mutex
	now  func() time.Time
	reqs []*certificatesv1.CertificateSigningRequest
}

func newSigner(t *testing.T, validity time.Duration) *signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(1000 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	s := &signer{client: fake.NewClientset(), caKey: key, ca: ca, caPEM: pemEncode("CERTIFICATE", der), validity: validity, now: time.Now}
	s.client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue}}
		csr.Status.Certificate = s.sign(t, req.Subject, req.PublicKey)
		s.reqs = append(s.reqs, csr.DeepCopy())
		// The fake's watches ignore field selectors: one request at a time
		// (earlier ones cleaned up, as the control plane's cleaner does).
		for _, old := range s.reqs[:len(s.reqs)-1] {
			_ = s.client.Tracker().Delete(certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), "", old.Name)
		}
		return false, nil, nil // the tracker stores it
	})
	return s
}

// sign issues a client certificate valid from now() (s.mu held or unshared).
func (s *signer) sign(t *testing.T, subj pkix.Name, pub any) []byte {
	t.Helper()
	nb := s.now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(nb.UnixNano()), Subject: subj, NotBefore: nb, NotAfter: nb.Add(s.validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, pub, s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pemEncode("CERTIFICATE", der)
}

// issue makes a node's pair directly (as node-kubeconfig would).
func (s *signer) issue(t *testing.T, node string) (certPEM, keyPEM []byte) {
	t.Helper()
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := keyutil.ParsePrivateKeyPEM(keyPEM)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sign(t, Template(node).Subject, k.(crypto.Signer).Public()), keyPEM
}

func (s *signer) requests() []*certificatesv1.CertificateSigningRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// writeBootstrapKubeconfig writes a token kubeconfig for server.
func writeBootstrapKubeconfig(t *testing.T, path string, ca []byte) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://cp.example:6443", CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

func TestRequestNodeCertificate(t *testing.T) {
	s := newSigner(t, time.Hour)
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := requestNodeCertificate(t.Context(), s.client, keyPEM, "n1", logger(t))
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	spec := reqs[0].Spec
	if spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
		!slices.Equal(spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}) {
		t.Errorf("request spec %+v", spec)
	}
	block, _ := pem.Decode(spec.Request)
	req, _ := x509.ParseCertificateRequest(block.Bytes)
	if req.Subject.CommonName != "system:node:n1" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) ||
		len(req.DNSNames)+len(req.IPAddresses) != 0 {
		t.Errorf("request subject %v SANs %v %v", req.Subject, req.DNSNames, req.IPAddresses)
	}
	if len(certPEM) == 0 {
		t.Error("no certificate")
	}
	// The same key asks under the same name (a restart finds its request).
	k, _ := keyutil.ParsePrivateKeyPEM(keyPEM)
	pub := k.(interface{ Public() crypto.PublicKey }).Public()
	a, _ := digestedName(pub, Template("n1").Subject, Usages(k))
	b, _ := digestedName(pub, Template("n2").Subject, Usages(k))
	if a != reqs[0].Name || a == b {
		t.Errorf("request name %q, digest %q, another node's %q", reqs[0].Name, a, b)
	}
}

// TestKubeconfigValid: the kubelet's isClientConfigStillValid.
func TestKubeconfigValid(t *testing.T) {
	dir := t.TempDir()
	s := newSigner(t, time.Hour)
	now := time.Now()
	write := func(name string, mutate func(*clientcmdapi.AuthInfo)) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://cp.example:6443", CertificateAuthorityData: s.caPEM}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
		mutate(cfg.AuthInfos["u"])
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "x"
		path := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	certPEM, keyPEM := s.issue(t, "n1")
	valid := write("valid", func(a *clientcmdapi.AuthInfo) { a.ClientCertificateData, a.ClientKeyData = certPEM, keyPEM })
	certFile := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	files := write("files", func(a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = certFile, keyFile })
	missingFile := write("missing-file", func(a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = filepath.Join(dir, "gone"), keyFile })
	garbage := write("garbage", func(a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = keyFile, keyFile })
	token := write("token", func(a *clientcmdapi.AuthInfo) { a.Token = "x" })
	for _, c := range []struct {
		path string
		at   time.Time
		want bool
	}{
		{valid, now, true},
		{files, now, true},
		{valid, now.Add(2 * time.Hour), false}, // expired
		{files, now.Add(2 * time.Hour), false},
		{filepath.Join(dir, "absent"), now, false},
		{missingFile, now, false},
		{garbage, now, false},
		{token, now, true},
	} {
		if got, why := kubeconfigValid(c.path, c.at); got != c.want {
			t.Errorf("%s at +%s: valid %v (%s), want %v", filepath.Base(c.path), c.at.Sub(now).Round(time.Hour), got, why, c.want)
		}
	}
}

// TestLoadClientCertWritesKubeconfig: a missing kubeconfig is bootstrapped
// through one request; the kubeconfig names kubelet-client-current.pem
// and the bootstrap kubeconfig's cluster; a second start requests nothing.
func TestLoadClientCertWritesKubeconfig(t *testing.T) {
	s := newSigner(t, time.Hour)
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap-kubeconfig")
	writeBootstrapKubeconfig(t, boot, s.caPEM)
	b := Bootstrap{Kubeconfig: filepath.Join(dir, "kubeconfig"), BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"),
		NodeName: "n1", Logger: logger(t)}
	if err := loadClientCert(t.Context(), b, s.client); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(b.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	current := filepath.Join(b.CertDir, "kubelet-client-current.pem")
	if a := cfg.AuthInfos[ctx.AuthInfo]; a.ClientCertificate != current || a.ClientKey != current || a.Token != "" {
		t.Errorf("auth info %+v", a)
	}
	if c := cfg.Clusters[ctx.Cluster]; c.Server != "https://cp.example:6443" || string(c.CertificateAuthorityData) != string(s.caPEM) {
		t.Errorf("cluster %+v", c)
	}
	if target, err := os.Readlink(current); err != nil || filepath.Dir(target) != b.CertDir && filepath.Dir(target) != "." {
		t.Errorf("current is not a symlink into the certificate directory: %q %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(b.CertDir, tmpKeyFile)); !os.IsNotExist(err) {
		t.Errorf("bootstrap key left behind: %v", err)
	}
	if ok, why := kubeconfigValid(b.Kubeconfig, time.Now()); !ok {
		t.Errorf("written kubeconfig invalid: %s", why)
	}
	if err := loadClientCert(t.Context(), b, s.client); err != nil {
		t.Fatal(err)
	}
	// The kubeconfig gone, the certificate directory's pair is reused.
	if err := os.Remove(b.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := loadClientCert(t.Context(), b, s.client); err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	// Expired: a new request.
	b.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if err := loadClientCert(t.Context(), b, s.client); err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 2 {
		t.Errorf("%d requests after expiry, want 2", n)
	}
}

func TestRotationDeadline(t *testing.T) {
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Hour)
	for _, c := range []struct {
		jitter float64
		want   time.Duration
	}{{0, 70 * time.Hour}, {0.5, 80 * time.Hour}, {0.999999, 90 * time.Hour}} {
		if got := RotationDeadline(nb, na, c.jitter).Sub(nb); got.Round(time.Second) != c.want {
			t.Errorf("jitter %v: +%s, want +%s", c.jitter, got, c.want)
		}
	}
}

// TestRotationOnFakeClock: nothing is requested before the deadline (80%
// of the life at jitter 0.5); at the deadline a new certificate for a new
// key replaces the current one in the store and for the clients; the
// next deadline follows from the new certificate.
func TestRotationOnFakeClock(t *testing.T) {
	s := newSigner(t, 100*time.Hour)
	dir := t.TempDir()
	certPEM, keyPEM := s.issue(t, "n1")
	block, _ := pem.Decode(certPEM)
	first, _ := x509.ParseCertificate(block.Bytes)
	clk := clocktesting.NewFakeClock(first.NotBefore)
	s.mu.Lock()
	s.now = clk.Now // renewed certificates start at the fake time
	s.mu.Unlock()
	kc, err := clientcmd.BuildConfigFromKubeconfigGetter("", func() (*clientcmdapi.Config, error) {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://cp.example:6443", CertificateAuthorityData: s.caPEM}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "x"
		return cfg, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rot, err := NewRotating(Rotation{Config: kc, CertDir: dir, NodeName: "n1", Logger: logger(t), Clock: clk,
		Jitter: func() float64 { return 0.5 }, Client: s.client})
	if err != nil {
		t.Fatal(err)
	}
	if rot.Current().Leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("not starting from the kubeconfig's certificate")
	}
	if _, err := os.Stat(filepath.Join(dir, "kubelet-client-current.pem")); err != nil {
		t.Errorf("the kubeconfig's pair is not stored: %v", err)
	}
	if rot.Config.TLSClientConfig.CertData != nil || rot.Config.Transport == nil {
		t.Error("clients do not go through the rotating transport")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- rot.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitTimer := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("rotation never waits")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitTimer()
	at := RotationDeadline(first.NotBefore, first.NotAfter, 0.5)
	clk.SetTime(at.Add(-time.Second))
	waitTimer() // still waiting
	if n := len(s.requests()); n != 0 {
		t.Fatalf("%d requests before the deadline", n)
	}
	clk.SetTime(at)
	deadline := time.Now().Add(30 * time.Second)
	for rot.Current().Leaf.SerialNumber.Cmp(first.SerialNumber) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not rotated at the deadline")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	second := rot.Current()
	if second.Leaf.Subject.CommonName != "system:node:n1" || slices.Equal(second.Certificate[0], first.Raw) {
		t.Errorf("rotated certificate %v", second.Leaf.Subject)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "kubelet-client-current.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode(stored)
	if block == nil || !slices.Equal(block.Bytes, second.Certificate[0]) {
		t.Error("the store's current pair is not the new certificate")
	}
	waitTimer() // the next rotation is scheduled, not run at once
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests after rotating, want 1", n)
	}
}
