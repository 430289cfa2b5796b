package controlplane_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// fakeNode registers a node whose kubelet API is a fake (see kubelettest)
// that trusts the shared server's cluster CA (for the API server's client
// certificate), and creates pods bound to it. The node never reports
// Ready and is unschedulable: no other test's pod lands on it.
type fakeNode struct {
	name    string
	kubelet *kubelettest.Server
	cs      kubernetes.Interface
}

func newFakeNode(t *testing.T, logs kubelettest.LogFunc) *fakeNode {
	t.Helper()
	return newFakeNodeServing(t, logs, kubeletServingCert(t, pki.KubeletServingCACertFile, pki.KubeletServingCAKeyFile))
}

// newFakeNodeServing: the fake kubelet serves the given certificate; none:
// httptest's own, self-signed.
func newFakeNodeServing(t *testing.T, logs kubelettest.LogFunc, serving ...tls.Certificate) *fakeNode {
	t.Helper()
	_, pool := clusterCA(t)
	kubelet, err := kubelettest.New(pool, logs, serving...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Close)
	n := &fakeNode{name: "fake-" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-"), kubelet: kubelet, cs: clientset(t, adminConfig)}
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: corev1.NodeSpec{Unschedulable: true}}
	if _, err = n.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.cs.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}) })
	// The controllers update new nodes too (pod CIDR, taints).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: kubelet.Host}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = kubelet.Port
		_, err = n.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// clusterCA reads the shared server's CA.
func clusterCA(t *testing.T) ([]byte, *x509.CertPool) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(shared.cfg.DataDir, "pki", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return caPEM, pool
}

// kubeletServingCert is a serving certificate for 127.0.0.1 signed by one
// of the shared server's CAs: the kubelet-serving CA is the one the API
// server verifies kubelets with.
func kubeletServingCert(t *testing.T, caCertFile, caKeyFile string) tls.Certificate {
	t.Helper()
	dir := filepath.Join(shared.cfg.DataDir, "pki")
	caPair, err := tls.LoadX509KeyPair(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "system:node:fake", Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caPair.Leaf, key.Public(), caPair.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// pod creates a pod with the containers on the fake node ("" node: left
// unscheduled) and marks it Running, which kubectl port-forward wants.
func (n *fakeNode) pod(t *testing.T, ns, name string, bound bool, containers ...string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if bound {
		pod.Spec.NodeName = n.name
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox:1"})
	}
	ctx := context.Background()
	created, err := n.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bound {
		return
	}
	// No agent confirms a graceful deletion: force it, so that the
	// namespace can go.
	t.Cleanup(func() {
		_ = n.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	created.Status.Phase = corev1.PodRunning
	if _, err := n.cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubectlIO runs kubectl with stdin and extra environment.
func kubectlIO(t *testing.T, stdin string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", adminConfig}, args...)...)
	cmd.Env = append(kubectlEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	t.Logf("%v kubectl %s: err=%v\n%s%s", env, strings.Join(args, " "), err, o.String(), e.String())
	return o.String(), e.String(), err
}

func TestKubectlLogsThroughTheKubelet(t *testing.T) {
	n := newFakeNode(t, nil)
	ns := namespace(t)
	n.pod(t, ns, "web", true, "c")
	n.pod(t, ns, "two", true, "a", "b")
	n.pod(t, ns, "waiting", true, "c")
	n.pod(t, ns, "pending", false, "c")

	if out := mustKubectl(t, "-n", ns, "logs", "web", "--tail=5", "--timestamps"); out != ns+"/web/c line 1\n"+ns+"/web/c line 2\n" {
		t.Errorf("logs web: got %q", out)
	}
	req, ok := n.kubelet.Last("/containerLogs/" + ns + "/web/c")
	if !ok || req.Query.Get("tailLines") != "5" || req.Query.Get("timestamps") != "true" {
		t.Errorf("kubelet log request: %+v", req)
	}
	if req.ClientCN != pki.KubeletClientUser || strings.Join(req.ClientOrgs, ",") != pki.KubeletClientGroup {
		t.Errorf("the kubelet saw client certificate %q %v, want the API server's kubelet client", req.ClientCN, req.ClientOrgs)
	}

	// Several containers: kubectl picks the first and says so.
	out, stderr, err := kubectl(t, "-n", ns, "logs", "two")
	if err != nil || out != ns+"/two/a line 1\n"+ns+"/two/a line 2\n" || !strings.Contains(stderr, `Defaulted container "a" out of: a, b`) {
		t.Errorf("logs two: got %q %q %v", out, stderr, err)
	}
	if out := mustKubectl(t, "-n", ns, "logs", "two", "-c", "b"); out != ns+"/two/b line 1\n"+ns+"/two/b line 2\n" {
		t.Errorf("logs two -c b: got %q", out)
	}

	// The kubelet's refusal comes through as the API error; kubectl
	// checks container names and the pod itself before asking.
	for _, tc := range []struct{ args, stderr string }{
		{"waiting", `Error from server (BadRequest): container "c" in pod "waiting" is waiting to start: ContainerCreating` + "\n"},
		{"two -c x", "error: container x is not valid for pod two out of: a, b\n"},
		{"nothere", `error: error from server (NotFound): pods "nothere" not found in namespace "` + ns + `"` + "\n"},
	} {
		out, stderr, err := kubectl(t, append([]string{"-n", ns, "logs"}, strings.Fields(tc.args)...)...)
		if err == nil || out != "" || stderr != tc.stderr {
			t.Errorf("logs %s: got %q %q %v, want error %q", tc.args, out, stderr, err, tc.stderr)
		}
	}
	// Upstream has nothing to stream for a pod not yet on a node: 204.
	if out, stderr, err := kubectl(t, "-n", ns, "logs", "pending"); err != nil || out != "" || stderr != "" {
		t.Errorf("logs pending: got %q %q %v, want nothing", out, stderr, err)
	}
}

func TestKubectlLogsFollow(t *testing.T) {
	release := make(chan struct{})
	n := newFakeNode(t, func(w http.ResponseWriter, r *http.Request, _, _, _ string) {
		if r.URL.Query().Get("follow") != "true" {
			http.Error(w, "follow expected", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "first line")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "second line")
	})
	ns := namespace(t)
	n.pod(t, ns, "web", true, "c")
	p := startKubectl(t, "-n", ns, "logs", "-f", "web")
	p.expect(t, "first line") // while the kubelet holds the stream open
	close(release)
	p.expect(t, "second line")
	if err := p.wait(t); err != nil {
		t.Errorf("logs -f after the kubelet ended the stream: %v", err)
	}
}

// The API server verifies kubelets' serving certificates with the
// kubelet-serving CA: a kubelet serving another certificate gets no
// request, even one the cluster CA signed.
func TestUntrustedKubeletRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		serving []tls.Certificate
	}{
		{"self-signed", nil},
		{"cluster CA", []tls.Certificate{kubeletServingCert(t, pki.CACertFile, pki.CAKeyFile)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newFakeNodeServing(t, nil, c.serving...)
			ns := namespace(t)
			n.pod(t, ns, "web", true, "c")
			out, stderr, err := kubectl(t, "-n", ns, "logs", "web")
			if err == nil || out != "" || !strings.Contains(stderr, "x509: certificate signed by unknown authority") {
				t.Errorf("logs from an untrusted kubelet: got %q %q %v, want a certificate error", out, stderr, err)
			}
			if _, ok := n.kubelet.Last("/containerLogs/" + ns + "/web/c"); ok {
				t.Error("the untrusted kubelet was sent the request")
			}
		})
	}
}

func TestKubectlNodeProxy(t *testing.T) {
	n := newFakeNode(t, nil)
	if out := mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/healthz"); out != "ok" {
		t.Errorf("get --raw .../proxy/healthz: got %q", out)
	}
	if out := mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/metrics"); !strings.Contains(out, "kubelet_fake 1\n") {
		t.Errorf("get --raw .../proxy/metrics: got %q", out)
	}
	if req, ok := n.kubelet.Last("/metrics"); !ok || req.ClientCN != pki.KubeletClientUser {
		t.Errorf("kubelet request: %+v", req)
	}
}

// Exec and attach: kubectl tries a WebSocket (v5.channel.k8s.io) first,
// which the API server translates to SPDY for the kubelet; with the
// WebSocket turned off kubectl speaks SPDY, which the API server passes
// through. Either way the kubelet sees SPDY.
func TestKubectlExecAndAttach(t *testing.T) {
	n := newFakeNode(t, nil)
	ns := namespace(t)
	n.pod(t, ns, "web", true, "c")
	n.pod(t, ns, "pending", false, "c")
	modes := []struct {
		name string
		env  []string
		// kubectl's User-Agent at the kubelet: only requests passed
		// through carry it; translated ones are the API server's.
		passedThrough bool
	}{
		{"websocket", nil, false},
		{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			out, stderr, err := kubectlIO(t, "", m.env, "-n", ns, "exec", "web", "-v=4", "--", "echo", "hello", "world")
			if err != nil || out != "echo hello world\n" || strings.Contains(stderr, "fallback") {
				t.Errorf("exec echo: got %q %q %v", out, stderr, err)
			}
			checkKubeletStream(t, n, "/exec/"+ns+"/web/c", m.passedThrough)
			if out, _, err := kubectlIO(t, "some input\n", m.env, "-n", ns, "exec", "-i", "web", "--", "cat"); err != nil || out != "some input\n" {
				t.Errorf("exec -i cat: got %q %v", out, err)
			}
			_, stderr, err = kubectlIO(t, "", m.env, "-n", ns, "exec", "web", "--", "fail", "3")
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 || stderr != "failing\ncommand terminated with exit code 3\n" {
				t.Errorf("exec fail 3: got %q %v, want exit code 3", stderr, err)
			}
			if out, _, err := kubectlIO(t, "to attach\n", m.env, "-n", ns, "attach", "-i", "web"); err != nil || !strings.Contains(out, "to attach\n") {
				t.Errorf("attach -i: got %q %v", out, err)
			}
			checkKubeletStream(t, n, "/attach/"+ns+"/web/c", m.passedThrough)
			_, stderr, err = kubectlIO(t, "", m.env, "-n", ns, "exec", "pending", "--", "true")
			if err == nil || !strings.Contains(stderr, "pod pending does not have a host assigned") {
				t.Errorf("exec into an unscheduled pod: got %q %v", stderr, err)
			}
		})
	}
}

// checkKubeletStream checks that the kubelet got a SPDY upgrade on path
// with the API server's certificate, from kubectl or from the API server.
func checkKubeletStream(t *testing.T, n *fakeNode, path string, passedThrough bool) {
	t.Helper()
	req, ok := n.kubelet.Last(path)
	switch {
	case !ok:
		t.Errorf("no request for %s reached the kubelet", path)
	case req.Upgrade != "SPDY/3.1" || req.ClientCN != pki.KubeletClientUser:
		t.Errorf("kubelet request %s: upgrade %q certificate %q", path, req.Upgrade, req.ClientCN)
	case strings.HasPrefix(req.UserAgent, "kubectl/") != passedThrough:
		t.Errorf("kubelet request %s: User-Agent %q, want kubectl's: %v", path, req.UserAgent, passedThrough)
	}
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)

// Port-forward: kubectl tunnels SPDY through a WebSocket first (the API
// server upgrades to SPDY at the kubelet and copies), or speaks SPDY.
func TestKubectlPortForward(t *testing.T) {
	n := newFakeNode(t, nil)
	ns := namespace(t)
	n.pod(t, ns, "web", true, "c")
	for _, m := range []struct {
		name string
		env  string
	}{{"websocket", ""}, {"spdy", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}} {
		t.Run(m.name, func(t *testing.T) {
			p, seen := startKubectlEnv(t, m.env, "-n", ns, "port-forward", "pod/web", ":8080", "-v=4")
			port := forwarding.FindStringSubmatch(p.expect(t, "Forwarding from 127.0.0.1"))[1]
			conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, "ping\n"); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 5)
			if _, err := io.ReadFull(conn, got); err != nil || string(got) != "ping\n" {
				t.Errorf("through the forwarded port: got %q, %v", got, err)
			}
			p.expect(t, "Handling connection for "+port)
			tunneled := false
			for _, l := range seen() {
				if strings.Contains(l, "fallback") {
					t.Errorf("kubectl fell back: %s", l)
				}
				tunneled = tunneled || strings.Contains(l, `"Negotiation complete" protocol="portforward.k8s.io"`)
			}
			if tunneled != (m.env == "") {
				t.Errorf("SPDY tunneled through a WebSocket: %v, want %v", tunneled, m.env == "")
			}
		})
	}
}

// startKubectlEnv is startKubectl with extra environment (env may be
// empty); seen returns every line kubectl has printed so far.
func startKubectlEnv(t *testing.T, env string, args ...string) (p *proc, seen func() []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", adminConfig}, args...)...)
	cmd.Env = kubectlEnv()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	p = &proc{lines: lines}
	var mu sync.Mutex
	var all []string
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			all = append(all, sc.Text())
			mu.Unlock()
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		p.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		for range lines {
		}
	})
	return p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), all...)
	}
}
