package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// rangeBody asks for every key under /registry (base64 of "/registry" and
// of its range end "/registrz"): what an attacker sends to read Secrets.
const rangeBody = `{"key":"L3JlZ2lzdHJ5","range_end":"L3JlZ2lzdHJ6"}`

// etcdRequest sends one request to the embedded etcd's client port.
func etcdRequest(c *http.Client, method, rawURL, body string) (int, string, error) {
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

func plainClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// etcdHTTPS is an HTTPS client trusting the etcd CA of pkiDir and
// presenting the given pair (none when certFile is "").
func etcdHTTPS(t *testing.T, pkiDir, certFile, keyFile string) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, pki.EtcdCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: x509.NewCertPool()}
	cfg.RootCAs.AppendCertsFromPEM(caPEM)
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		// Always sent: Go would otherwise hold back a certificate
		// whose issuer is not among the CAs etcd asks for.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

// TestEtcdRequiresClientCertificates attacks the shared server's embedded
// etcd as a local user would: plain HTTP, HTTPS without a certificate,
// and certificates of other CAs (the cluster CA's admin certificate
// among them) are all refused; only the etcd CA's certificates get in.
func TestEtcdRequiresClientCertificates(t *testing.T) {
	pkiDir := filepath.Join(shared.cfg.DataDir, "pki")
	host := "127.0.0.1:" + strconv.Itoa(shared.cfg.EtcdClientPort)

	plain := plainClient()
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPost, "/v3/kv/range", rangeBody},
		{http.MethodGet, "/health", ""},
		{http.MethodGet, "/version", ""},
	} {
		code, body, err := etcdRequest(plain, req.method, "http://"+host+req.path, req.body)
		t.Logf("plain HTTP %s %s: %d %q %v", req.method, req.path, code, body, err)
		if err == nil && code/100 == 2 {
			t.Errorf("plain HTTP %s %s = %d %q, want it refused", req.method, req.path, code, body)
		}
	}

	other := t.TempDir()
	otherEtcd, err := pki.EnsureEtcd(other, pki.Options{Hostname: "other", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		certFile, keyFile string
		wantAlert         string
	}{
		{"no client certificate", "", "", "certificate required"},
		{"another etcd CA", otherEtcd.ClientCertFile, otherEtcd.ClientKeyFile, "unknown certificate authority"},
		{"the cluster CA (admin)", filepath.Join(pkiDir, pki.AdminCertFile), filepath.Join(pkiDir, pki.AdminKeyFile), "unknown certificate authority"},
	} {
		code, body, err := etcdRequest(etcdHTTPS(t, pkiDir, tc.certFile, tc.keyFile), http.MethodPost, "https://"+host+"/v3/kv/range", rangeBody)
		if err == nil || !strings.Contains(err.Error(), tc.wantAlert) {
			t.Errorf("%s: /v3/kv/range = %d %q, %v; want the TLS handshake refused with %q", tc.name, code, body, err, tc.wantAlert)
		}
	}

	// The same request with the API server's certificate gets in: the
	// refusals above are about the certificates, not a closed port.
	etcdClient := etcdHTTPS(t, pkiDir, filepath.Join(pkiDir, pki.EtcdClientCertFile), filepath.Join(pkiDir, pki.EtcdClientKeyFile))
	if code, body, err := etcdRequest(etcdClient, http.MethodPost, "https://"+host+"/v3/kv/range", rangeBody); err != nil || code != http.StatusOK {
		t.Errorf("apiserver-etcd-client: /v3/kv/range = %d %q, %v; want 200", code, body, err)
	}
	health := etcdHTTPS(t, pkiDir, filepath.Join(pkiDir, pki.EtcdHealthcheckClientCertFile), filepath.Join(pkiDir, pki.EtcdHealthcheckClientKeyFile))
	if code, body, err := etcdRequest(health, http.MethodGet, "https://"+host+"/health", ""); err != nil || code != http.StatusOK {
		t.Errorf("healthcheck-client: /health = %d %q, %v; want 200", code, body, err)
	}
}

// TestEtcdTLSOnPlainDataDir starts a server on a data dir whose etcd was
// written by a plain-HTTP member (what servers ran before etcd served
// TLS), stores a Secret, and restarts on the same data dir.
func TestEtcdTLSOnPlainDataDir(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	writePlainEtcd(t, filepath.Join(cfg.DataDir, "etcd"), cfg.EtcdClientPort, cfg.EtcdPeerPort)

	s, err := startServer(cfg)
	if err != nil {
		t.Fatalf("start on a plain-HTTP etcd data dir: %v", err)
	}
	defer func() {
		if s != nil {
			if err := s.stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}()
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	host := "127.0.0.1:" + strconv.Itoa(cfg.EtcdClientPort)
	plain := plainClient()
	if code, body, err := etcdRequest(plain, http.MethodPost, "http://"+host+"/v3/kv/range", rangeBody); err == nil && code/100 == 2 {
		t.Errorf("plain HTTP after the upgrade: %d %q, want it refused", code, body)
	}
	etcdClient := etcdHTTPS(t, pkiDir, filepath.Join(pkiDir, pki.EtcdClientCertFile), filepath.Join(pkiDir, pki.EtcdClientKeyFile))
	if code, body, err := etcdRequest(etcdClient, http.MethodPost, "https://"+host+"/v3/kv/range", `{"key":"L29sZA=="}`); err != nil || !strings.Contains(body, `"count":"1"`) {
		t.Errorf("the plain member's key /old over TLS: %d %q, %v", code, body, err)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd-tls"}, StringData: map[string]string{"k": "v"}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := clientset(t, s.kubeconfig()).CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	err = s.stop()
	s = nil
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s, err = startServer(cfg); err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	got, err := clientset(t, s.kubeconfig()).CoreV1().Secrets("default").Get(ctx, "etcd-tls", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("secret after restart: %v, data %q", err, got.Data)
	}
}

// writePlainEtcd runs an etcd member as servers did before TLS (http
// client and peer URLs, member name "nodeagent") and stores /old.
func writePlainEtcd(t *testing.T, dir string, clientPort, peerPort int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ec := embed.NewConfig()
	ec.Name = "nodeagent"
	ec.Dir = dir
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(clientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	srv, err := embed.StartEtcd(ec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("plain etcd not ready")
	}
	code, body, err := etcdRequest(plainClient(), http.MethodPost,
		clientURL.String()+"/v3/kv/put", `{"key":"L29sZA==","value":"a2VwdA=="}`)
	if err != nil || code != http.StatusOK {
		t.Fatalf("put /old on the plain member: %d %q %v", code, body, err)
	}
}
