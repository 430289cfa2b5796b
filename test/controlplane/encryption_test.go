package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// rawEtcd is a client of the server's embedded etcd with the API
// server's own certificate (apiserver-etcd-client).
func rawEtcd(t *testing.T, cfg server.Config) *clientv3.Client {
	t.Helper()
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, pki.EtcdCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, pki.EtcdClientCertFile), filepath.Join(pkiDir, pki.EtcdClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{RootCAs: x509.NewCertPool(), Certificates: []tls.Certificate{pair}}
	tlsCfg.RootCAs.AppendCertsFromPEM(caPEM)
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://127.0.0.1:" + strconv.Itoa(cfg.EtcdClientPort)},
		TLS:         tlsCfg,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func rawSecret(t *testing.T, c *clientv3.Client, ns, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/registry/secrets/"+ns+"/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get secret %s/%s: %v (%d keys)", ns, name, err, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// TestSecretsEncryptedAtRest runs a server whose
// --encryption-provider-config lists identity first (Secrets go to etcd
// in plaintext, as in data dirs from before encryption), then restarts it
// on the same data dir without the flag: the generated aescbc
// configuration encrypts new Secrets, the plaintext one stays readable,
// and rewriting it (an update that changes nothing) encrypts it.
func TestSecretsEncryptedAtRest(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	cfg.EncryptionProviderConfig = writeFile(t, "identity-first.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - identity: {}
  - aescbc: {keys: [{name: old, secret: `+key+`}]}
`)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const secretValue = "s3cr3t-at-rest"
	s, err := startServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		if s != nil {
			if err := s.stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
			s = nil
		}
	}
	defer stop()
	newSecret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": secretValue}}
	}
	if _, err := clientset(t, s.kubeconfig()).CoreV1().Secrets("default").Create(ctx, newSecret("before"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	before := base64.StdEncoding.EncodeToString([]byte(secretValue))
	if raw := rawSecret(t, rawEtcd(t, cfg), "default", "before"); !strings.HasPrefix(raw, "{") || !strings.Contains(raw, before) {
		t.Fatalf("identity first: stored %q, want plaintext JSON", raw)
	}
	stop()

	cfg.EncryptionProviderConfig = ""
	if s, err = startServer(cfg); err != nil {
		t.Fatalf("restart with the generated config: %v", err)
	}
	generated := filepath.Join(cfg.DataDir, server.EncryptionConfigFile)
	if fi, err := os.Stat(generated); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated config %s: %v, %v", generated, fi, err)
	}
	cs := clientset(t, s.kubeconfig())
	etcd := rawEtcd(t, cfg)
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, newSecret("after"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	raw := rawSecret(t, etcd, "default", "after")
	if !strings.HasPrefix(raw, "k8s:enc:aescbc:v1:aescbckey:") || strings.Contains(raw, before) || strings.Contains(raw, secretValue) {
		t.Fatalf("stored %q, want k8s:enc:aescbc:v1:aescbckey: and no secret data", raw)
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "after", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != secretValue {
		t.Fatalf("get encrypted secret: %v, %q", err, got.Data)
	}
	old, err := cs.CoreV1().Secrets("default").Get(ctx, "before", metav1.GetOptions{})
	if err != nil || string(old.Data["password"]) != secretValue {
		t.Fatalf("get plaintext secret: %v, %q", err, old.Data)
	}
	list, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 2 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	if _, err := cs.CoreV1().Secrets("default").Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if raw := rawSecret(t, etcd, "default", "before"); !strings.HasPrefix(raw, "k8s:enc:aescbc:v1:aescbckey:") {
		t.Fatalf("rewritten plaintext secret stored %q", raw)
	}
}

// TestBadEncryptionConfigRefused: a key of the wrong length stops the
// server with upstream's validation message.
func TestBadEncryptionConfigRefused(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	cfg.EncryptionProviderConfig = writeFile(t, "short-key.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc: {keys: [{name: k, secret: c2hvcnQ=}]}
`)
	s, err := startServer(cfg)
	if err == nil {
		_ = s.stop()
		t.Fatal("server started with a 5-byte aescbc key")
	}
	const want = `resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}
