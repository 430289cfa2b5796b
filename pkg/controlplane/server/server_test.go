package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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

type running struct {
	cancel context.CancelFunc
	errc   chan error
}

// start runs the control plane and waits until it is ready.
func start(t *testing.T, cfg Config) *running {
	t.Helper()
	ready := make(chan struct{})
	cfg.Ready = ready
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-r.errc:
		cancel()
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("control plane not ready after 60s")
	}
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after cancel")
	}
}

func caSerial(t *testing.T, dir string) *big.Int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber
}

func adminClient(t *testing.T, dir string) (*http.Client, string) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc, rc.Host
}

// anonClient trusts the CA but presents no client certificate.
func anonClient(t *testing.T, dir string) *http.Client {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func do(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func etcdPut(t *testing.T, dataDir string, port int, key, val string) {
	t.Helper()
	cli := etcdClient(t, dataDir, port)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, val); err != nil {
		t.Fatal(err)
	}
}

func etcdGet(t *testing.T, dataDir string, port int, key string) string {
	t.Helper()
	cli := etcdClient(t, dataDir, port)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// etcdClient connects to the embedded etcd of dataDir as the API server
// does, with apiserver-etcd-client.
func etcdClient(t *testing.T, dataDir string, port int) *clientv3.Client {
	t.Helper()
	pkiDir := filepath.Join(dataDir, "pki")
	info := transport.TLSInfo{
		TrustedCAFile: filepath.Join(pkiDir, pki.EtcdCACertFile),
		CertFile:      filepath.Join(pkiDir, pki.EtcdClientCertFile),
		KeyFile:       filepath.Join(pkiDir, pki.EtcdClientKeyFile),
	}
	tlsCfg, err := info.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://127.0.0.1:" + strconv.Itoa(port)},
		DialTimeout: 5 * time.Second,
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// settledGoroutines waits briefly for exiting goroutines to finish.
func settledGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > limit && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

const unauthorizedBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`

// TestRunRestartAndStop runs the real control plane (embedded etcd, PKI,
// HTTPS) twice on the same data dir and ports: the CA and etcd data
// survive, and a stop releases every port and goroutine.
func TestRunRestartAndStop(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		DataDir:        dir,
		SecurePort:     freePort(t),
		BindAddress:    "127.0.0.1",
		EtcdClientPort: freePort(t),
		EtcdPeerPort:   freePort(t),
	}
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("s3cret,alice,1001,\"devs,ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	before := runtime.NumGoroutine()

	// First run: creates the PKI, kubeconfig and etcd member.
	r := start(t, cfg)
	admin, host := adminClient(t, dir)
	anon := anonClient(t, dir)

	if code, body := do(t, admin, host+"/readyz", ""); code != http.StatusOK || body != "ok" {
		t.Fatalf("admin /readyz = %d %q", code, body)
	}
	for _, p := range []string{"/readyz", "/livez", "/healthz"} {
		if code, body := do(t, anon, host+p, ""); code != http.StatusOK || body != "ok" {
			t.Errorf("anonymous %s = %d %q, want 200 ok", p, code, body)
		}
	}
	if code, _ := do(t, admin, host+"/version", ""); code == http.StatusUnauthorized || code == http.StatusForbidden {
		t.Errorf("admin GET /version = %d", code)
	}
	cs := clientset(t, dir)
	if v, err := cs.Discovery().ServerVersion(); err != nil {
		t.Errorf("client-go ServerVersion: %v", err)
	} else {
		t.Logf("server version %s", v.GitVersion)
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "survives-restart"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create namespace as admin: %v", err)
	}
	code, body := do(t, anon, host+"/api", "")
	if code != http.StatusUnauthorized {
		t.Fatalf("anonymous /api = %d, want 401", code)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("401 body %q: %v", body, err)
	}
	_ = json.Unmarshal([]byte(unauthorizedBody), &want)
	if gotJSON, _ := json.Marshal(got); string(gotJSON) != mustCanonical(want) {
		t.Errorf("401 body = %s, want %s", body, unauthorizedBody)
	}
	if code, _ := do(t, anon, host+"/api", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("bad token /api = %d, want 401", code)
	}
	if code, _ := do(t, anon, host+"/version", "s3cret"); code == http.StatusUnauthorized {
		t.Errorf("token from tokens.csv rejected")
	}

	serial := caSerial(t, dir)
	etcdPut(t, dir, cfg.EtcdClientPort, "/test/persisted", "yes")
	admin.CloseIdleConnections()
	anon.CloseIdleConnections()
	r.stop(t)
	const slack = 3
	afterFirst := settledGoroutines(before + slack)

	// Second run, same process, same ports, same data dir.
	r = start(t, cfg)
	if got := caSerial(t, dir); got.Cmp(serial) != 0 {
		t.Errorf("CA regenerated on restart: serial %v, was %v", got, serial)
	}
	if v := etcdGet(t, dir, cfg.EtcdClientPort, "/test/persisted"); v != "yes" {
		t.Errorf("etcd key after restart = %q, want yes", v)
	}
	admin, host = adminClient(t, dir)
	if code, body := do(t, admin, host+"/readyz", ""); code != http.StatusOK || body != "ok" {
		t.Fatalf("admin /readyz after restart = %d %q", code, body)
	}
	if _, err := clientset(t, dir).CoreV1().Namespaces().Get(t.Context(), "survives-restart", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace after restart: %v", err)
	}
	admin.CloseIdleConnections()
	r.stop(t)

	// Everything is released: ports bind again, goroutines wind down.
	for _, port := range []int{cfg.SecurePort, cfg.EtcdClientPort, cfg.EtcdPeerPort} {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d still in use after stop: %v", port, err)
			continue
		}
		l.Close()
	}
	n := settledGoroutines(before + slack)
	t.Logf("goroutines: %d before, %d after the first stop, %d after the second", before, afterFirst, n)
	if afterFirst > before+slack || n > before+slack {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines leaked across a run:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

func clientset(t *testing.T, dir string) *kubernetes.Clientset {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	cs, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func mustCanonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRunFailsOnBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := Config{
		DataDir:        t.TempDir(),
		SecurePort:     l.Addr().(*net.TCPAddr).Port,
		BindAddress:    "127.0.0.1",
		EtcdClientPort: freePort(t),
		EtcdPeerPort:   freePort(t),
		Logger:         slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
	if err := Run(t.Context(), cfg); err == nil {
		t.Fatal("Run succeeded on a busy port")
	}
	// etcd was stopped on the way out: its port is free again.
	l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(cfg.EtcdClientPort))
	if err != nil {
		t.Fatalf("etcd port still in use: %v", err)
	}
	l2.Close()
}

// TestRunExternalEtcd points the control plane at a separate etcd (an
// embedded one started by the test on other ports, standing in for an
// external cluster): nothing is embedded in the data dir.
// externalEtcd starts a one-member etcd cluster with its own PKI for the
// test and returns a server Config on it for dataDir, with its TLS from
// the --etcd-* flags.
func externalEtcd(t *testing.T) func(dataDir string) Config {
	t.Helper()
	clusterPort := freePort(t)
	clusterDir := t.TempDir()
	clusterPKI, err := pki.EnsureEtcd(filepath.Join(clusterDir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := etcd.Start(t.Context(), etcd.Config{
		DataDir: filepath.Join(clusterDir, "etcd"), ClientPort: clusterPort, PeerPort: freePort(t),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	}.WithPKI(clusterPKI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	return func(dataDir string) Config {
		return Config{DataDir: dataDir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
			EtcdServers: []string{"https://127.0.0.1:" + strconv.Itoa(clusterPort)},
			EtcdCAFile:  clusterPKI.CAFile, EtcdCertFile: clusterPKI.ClientCertFile, EtcdKeyFile: clusterPKI.ClientKeyFile}
	}
}

func TestRunExternalEtcd(t *testing.T) {
	dir := t.TempDir()
	r := start(t, externalEtcd(t)(dir))
	admin, host := adminClient(t, dir)
	if code, body := do(t, admin, host+"/readyz", ""); code != http.StatusOK || body != "ok" {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	admin.CloseIdleConnections()
	r.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("external mode created an embedded etcd dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", pki.EtcdCACertFile)); !os.IsNotExist(err) {
		t.Errorf("external mode created an etcd CA: %v", err)
	}
}
