package nodeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/keyutil"
)

// testCA signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// clientCert issues a certificate for user in groups with the given usage.
func (ca *testCA) clientCert(t *testing.T, user string, groups []string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// reviews fakes the API server's TokenReview and SubjectAccessReview: one
// known token, and a policy function; it counts the calls.
type reviews struct {
	cs         *fake.Clientset
	tokenCalls atomic.Int32
	sarCalls   atomic.Int32
	mu         sync.Mutex
	sars       []authorizationv1.SubjectAccessReviewSpec
}

func newReviews(policy func(authorizationv1.SubjectAccessReviewSpec) bool) *reviews {
	r := &reviews{cs: fake.NewClientset()}
	r.cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r.tokenCalls.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "good-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:monitoring:scraper", UID: "sa-uid", Groups: []string{"system:serviceaccounts"},
				Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"scraper-0"}}}}
		}
		return true, tr, nil
	})
	r.cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r.sarCalls.Add(1)
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		r.mu.Lock()
		r.sars = append(r.sars, sar.Spec)
		r.mu.Unlock()
		sar.Status.Allowed = policy(sar.Spec)
		return true, sar, nil
	})
	return r
}

// authServer runs the node API over TLS with x509 and webhook auth.
func authServer(t *testing.T, ca *testCA, rv *reviews, anonymous bool) *httptest.Server {
	t.Helper()
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{},
		Authenticator: NewAuthenticator(AuthnConfig{ClientCAs: ca.pool(), TokenReviews: rv.cs.AuthenticationV1().TokenReviews(), Anonymous: anonymous}),
		Authorizer:    NewWebhookAuthorizer(AuthzConfig{Reviews: rv.cs.AuthorizationV1().SubjectAccessReviews()}),
		Logger:        quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ServingCertificate(CertConfig{Dir: filepath.Join(t.TempDir(), "pki"), Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = TLSConfig(cert, ca.pool())
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, cert *tls.Certificate) (int, string) {
	t.Helper()
	tlsCfg := &tls.Config{InsecureSkipVerify: true} // kube-apiserver does not verify kubelets by default either
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// apiServerOnly allows the API server's kubelet client (system:masters)
// everything and the scraper only nodes/pods.
func apiServerOnly(spec authorizationv1.SubjectAccessReviewSpec) bool {
	ra := spec.ResourceAttributes
	if ra == nil || ra.Resource != "nodes" || ra.Name != "node1" || ra.Version != "v1" {
		return false
	}
	return slices.Contains(spec.Groups, "system:masters") || (spec.User == "system:serviceaccount:monitoring:scraper" && ra.Subresource == "pods")
}

func TestAuthentication(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	other := newTestCA(t, "other-ca")
	apiserver := ca.clientCert(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, x509.ExtKeyUsageClientAuth)
	foreign := other.clientCert(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, x509.ExtKeyUsageClientAuth)
	serverOnly := ca.clientCert(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, x509.ExtKeyUsageServerAuth)
	tests := []struct {
		name      string
		anonymous bool
		token     string
		cert      *tls.Certificate
		path      string
		code      int
		body      string
	}{
		{"client certificate", false, "", &apiserver, "/pods", 200, ""},
		{"certificate of another CA", false, "", &foreign, "/pods", 401, "Unauthorized"},
		{"certificate without client usage", false, "", &serverOnly, "/pods", 401, "Unauthorized"},
		{"anonymous refused", false, "", nil, "/pods", 401, "Unauthorized"},
		{"anonymous enabled is still authorized", true, "", nil, "/pods", 403,
			"Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource=proxy)"},
		// (A certificate of another CA is not even sent: the server names
		// its acceptable CAs, as the kubelet's does.)
		{"bad credentials are not anonymous", true, "", &serverOnly, "/pods", 401, "Unauthorized"},
		{"bad token", true, "bad-token", nil, "/pods", 401, "Unauthorized"},
		{"token allowed by the fine-grained subresource", false, "good-token", nil, "/pods", 200, ""},
		{"token denied elsewhere", false, "good-token", nil, "/containerLogs/a/b/c", 403,
			"Forbidden (user=system:serviceaccount:monitoring:scraper, verb=get, resource=nodes, subresource=proxy)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := authServer(t, ca, newReviews(apiServerOnly), tt.anonymous)
			code, body := call(t, srv, http.MethodGet, tt.path, tt.token, tt.cert)
			if code != tt.code || (tt.body != "" && body != tt.body) {
				t.Errorf("%d %q, want %d %q", code, body, tt.code, tt.body)
			}
		})
	}
}

func TestReviewsCarryTheIdentityAndAreCached(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	rv := newReviews(apiServerOnly)
	srv := authServer(t, ca, rv, false)
	for range 3 {
		if code, body := call(t, srv, http.MethodGet, "/pods", "good-token", nil); code != 200 {
			t.Fatalf("%d %q", code, body)
		}
	}
	if rv.tokenCalls.Load() != 1 || rv.sarCalls.Load() != 1 {
		t.Errorf("token reviews %d, access reviews %d: want 1 each (cached)", rv.tokenCalls.Load(), rv.sarCalls.Load())
	}
	got := rv.sars[0]
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:monitoring:scraper", UID: "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra:  map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"scraper-0"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Version: "v1", Resource: "nodes", Subresource: "pods", Name: "node1"},
	}
	if got.String() != want.String() {
		t.Errorf("SubjectAccessReview spec\n got %v\nwant %v", got.String(), want.String())
	}
}

func TestWebhookAuthorizerCacheTTLs(t *testing.T) {
	now := time.Unix(1000, 0)
	var allow atomic.Bool
	rv := newReviews(func(authorizationv1.SubjectAccessReviewSpec) bool { return allow.Load() })
	az := NewWebhookAuthorizer(AuthzConfig{Reviews: rv.cs.AuthorizationV1().SubjectAccessReviews(), Now: func() time.Time { return now }})
	attrs := Attributes{User: &UserInfo{Name: "u"}, Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "n"}
	check := func(wantAllowed bool, wantCalls int32) {
		t.Helper()
		allowed, _, err := az.Authorize(context.Background(), attrs)
		if err != nil || allowed != wantAllowed || rv.sarCalls.Load() != wantCalls {
			t.Fatalf("allowed=%v err=%v calls=%d, want %v after %d calls", allowed, err, rv.sarCalls.Load(), wantAllowed, wantCalls)
		}
	}
	check(false, 1)
	allow.Store(true)
	now = now.Add(29 * time.Second)
	check(false, 1) // a deny is kept 30s
	now = now.Add(2 * time.Second)
	check(true, 2)
	allow.Store(false)
	now = now.Add(4 * time.Minute)
	check(true, 2) // an allow is kept 5m
	now = now.Add(2 * time.Minute)
	check(false, 3)
}

func TestAuthorizationErrorIs500(t *testing.T) {
	s, err := New(Config{
		NodeName: "node1", Pods: podList{}, Runtime: &fakeRuntime{}, Logger: quietLogger(),
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}),
		Authorizer: AuthorizerFunc(func(context.Context, Attributes) (bool, string, error) {
			return false, "", io.ErrUnexpectedEOF
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := get(t, s.Handler(), "/exec/a/b/c")
	if rec.Code != 500 || strings.TrimSpace(rec.Body.String()) != "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=proxy)" {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
}

func TestTokenIsNotPassedOn(t *testing.T) {
	rv := newReviews(func(authorizationv1.SubjectAccessReviewSpec) bool { return true })
	authn := NewAuthenticator(AuthnConfig{TokenReviews: rv.cs.AuthenticationV1().TokenReviews()})
	r := httptest.NewRequest(http.MethodGet, "/pods", nil)
	r.Header.Set("Authorization", "Bearer good-token")
	if u, ok, err := authn.AuthenticateRequest(r); !ok || err != nil || u.Name != "system:serviceaccount:monitoring:scraper" {
		t.Fatalf("%v %v %v", u, ok, err)
	}
	if r.Header.Get("Authorization") != "" {
		t.Error("the bearer token is still on the request that may be proxied to the runtime")
	}
}

func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/a/b/c", "create", []string{"checkpoint"}},
		{"GET", "/containerLogs/a/b/c", "get", []string{"proxy"}},
		{"GET", "/debug/pods/a/b/trace", "get", []string{"proxy"}},
		{"GET", "/debug/pprof/heap", "get", []string{"proxy"}},
		{"POST", "/exec/a/b/c", "create", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		{"OPTIONS", "/x", "", []string{"proxy"}},
	}
	u := &UserInfo{Name: "u"}
	for _, tt := range tests {
		attrs := requestAttributes("node1", u, httptest.NewRequest(tt.method, tt.path, nil))
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
			if a.Verb != tt.verb || a.Resource != "nodes" || a.Name != "node1" || a.APIVersion != "v1" || a.User != u {
				t.Errorf("%s %s: %+v", tt.method, tt.path, a)
			}
		}
		if !slices.Equal(subs, tt.subs) {
			t.Errorf("%s %s: subresources %v, want %v", tt.method, tt.path, subs, tt.subs)
		}
	}
}

func TestServingCertificateIsKept(t *testing.T) {
	dir := t.TempDir()
	first, err := ServingCertificate(CertConfig{Dir: dir, Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ServingCertificate(CertConfig{Dir: dir, Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Certificate[0], again.Certificate[0]) {
		t.Error("a second start generated a new certificate")
	}
	leaf, _ := x509.ParseCertificate(first.Certificate[0])
	if !slices.Contains(leaf.DNSNames, "node1") {
		t.Errorf("DNS names %v lack the node name", leaf.DNSNames)
	}
	named, err := ServingCertificate(CertConfig{CertFile: filepath.Join(dir, SelfSignedCertName), KeyFile: filepath.Join(dir, SelfSignedKeyName)})
	if err != nil || !slices.Equal(named.Certificate[0], first.Certificate[0]) {
		t.Errorf("tlsCertFile not used: %v", err)
	}
	if _, err := ServingCertificate(CertConfig{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: filepath.Join(dir, "missing.key")}); err == nil {
		t.Error("a missing tlsCertFile is not an error")
	}
}

func TestExpiredSelfSignedCertificateIsReplaced(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "node1"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, SelfSignedCertName), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SelfSignedKeyName), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ServingCertificate(CertConfig{Dir: dir, Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Leaf == nil || !got.Leaf.NotAfter.After(time.Now()) {
		t.Errorf("serving an expired certificate (until %v)", got.Leaf.NotAfter)
	}
}
