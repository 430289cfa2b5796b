package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// withTLS fills cfg's server and client TLS from an etcd PKI in pkiDir,
// as the control plane does.
func withTLS(t *testing.T, pkiDir string, cfg Config) Config {
	t.Helper()
	p, err := pki.EnsureEtcd(pkiDir, pki.Options{Hostname: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.WithPKI(p)
}

func startEmbeddedT(t *testing.T, dir string, client, peer int) *Etcd {
	t.Helper()
	cfg := Config{DataDir: dir, ClientPort: client, PeerPort: peer, StartTimeout: 30 * time.Second}
	e, err := Start(t.Context(), withTLS(t, filepath.Join(filepath.Dir(dir), "pki"), cfg))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !e.Embedded() {
		t.Fatal("expected an embedded server")
	}
	return e
}

func get(t *testing.T, e *Etcd, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := e.Client().Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func put(t *testing.T, e *Etcd, key, val string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := e.Client().Put(ctx, key, val); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	client, peer := freePort(t), freePort(t)

	e := startEmbeddedT(t, dir, client, peer)
	put(t, e, "/registry/test", "v1")
	if got := get(t, e, "/registry/test"); got != "v1" {
		t.Fatalf("get = %q, want v1", got)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Same data dir and ports: the member restarts and the data is there.
	e = startEmbeddedT(t, dir, client, peer)
	defer e.Close()
	if got := get(t, e, "/registry/test"); got != "v1" {
		t.Fatalf("after restart get = %q, want v1", got)
	}
}

func TestExternal(t *testing.T) {
	// The "external cluster" is a separate embedded etcd on its own ports.
	client := freePort(t)
	dir := t.TempDir()
	cluster := startEmbeddedT(t, filepath.Join(dir, "etcd"), client, freePort(t))
	defer cluster.Close()
	put(t, cluster, "/shared", "from-cluster")

	// The external client gets the same client certificate and CA through
	// CAFile/CertFile/KeyFile, as --etcd-cafile and friends give them.
	ext := withTLS(t, filepath.Join(dir, "pki"), Config{
		Servers:      []string{"https://127.0.0.1:" + strconv.Itoa(client)},
		StartTimeout: 10 * time.Second,
	})
	ext.ServerTLS = ServerTLS{}
	e, err := Start(t.Context(), ext)
	if err != nil {
		t.Fatalf("Start external: %v", err)
	}
	defer e.Close()
	if e.Embedded() || e.Err() != nil {
		t.Fatal("external mode must not embed a server")
	}
	if got := get(t, e, "/shared"); got != "from-cluster" {
		t.Fatalf("get = %q", got)
	}
	put(t, e, "/written-by-client", "x")
	if got := get(t, cluster, "/written-by-client"); got != "x" {
		t.Fatalf("cluster sees %q", got)
	}
}

func TestExternalUnreachable(t *testing.T) {
	_, err := Start(t.Context(), Config{
		Servers:      []string{"http://127.0.0.1:" + strconv.Itoa(freePort(t))},
		StartTimeout: time.Second,
	})
	if err == nil {
		t.Fatal("expected an error for an unreachable cluster")
	}
	t.Log(err)
}

func TestEmbeddedRequiresDataDir(t *testing.T) {
	if _, err := Start(t.Context(), Config{}); err == nil {
		t.Fatal("expected an error without DataDir")
	}
}

func TestEmbeddedRequiresTLS(t *testing.T) {
	_, err := Start(t.Context(), Config{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "ServerTLS") {
		t.Fatalf("Start without TLS: %v, want a ServerTLS error", err)
	}
}

// TestEmbeddedServesOnlyTLS: the client port refuses plain HTTP and TLS
// without a client certificate.
func TestEmbeddedServesOnlyTLS(t *testing.T) {
	dir := t.TempDir()
	client := freePort(t)
	e := startEmbeddedT(t, filepath.Join(dir, "etcd"), client, freePort(t))
	defer e.Close()
	base := "127.0.0.1:" + strconv.Itoa(client)
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + base + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP /health = %d", resp.StatusCode)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", pki.EtcdCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, err := noCert.Get("https://" + base + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("HTTPS without a client certificate: %d, want a handshake error", resp.StatusCode)
	}
}

// TestEmbeddedUpgradesPlainDataDir opens a data dir a plain-HTTP member
// wrote (what the server ran before its etcd served TLS): the data is
// there and the member now advertises its https peer URL.
func TestEmbeddedUpgradesPlainDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	client, peer := freePort(t), freePort(t)
	writePlainDataDir(t, dir, client, peer)

	e := startEmbeddedT(t, dir, client, peer)
	defer e.Close()
	if got := get(t, e, "/registry/old"); got != "kept" {
		t.Fatalf("get = %q, want kept", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	members, err := e.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := "https://127.0.0.1:" + strconv.Itoa(peer)
	if len(members.Members) != 1 || !slices.Equal(members.Members[0].PeerURLs, []string{want}) {
		t.Fatalf("members = %v, want one with peer URL %s", members.Members, want)
	}
}

// writePlainDataDir runs a member as the server did before TLS (http
// client and peer URLs) and writes a key.
func writePlainDataDir(t *testing.T, dir string, client, peer int) {
	t.Helper()
	ec := embed.NewConfig()
	ec.Name = memberName
	ec.Dir = dir
	clientURL, peerURL := loopbackURL("http", client), loopbackURL("http", peer)
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	srv, err := embed.StartEtcd(ec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("plain member not ready")
	}
	cli, err := newClient([]string{clientURL.String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/registry/old", "kept"); err != nil {
		t.Fatal(err)
	}
}
