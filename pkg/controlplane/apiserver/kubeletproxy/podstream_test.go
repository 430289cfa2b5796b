package kubeletproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// executors build the ways clients run remote commands: SPDY (POST), a
// WebSocket v5 (GET, translated to SPDY towards the kubelet) and kubectl's
// WebSocket-then-SPDY fallback.
var executors = map[string]func(h *kubeletHarness, u *url.URL) (remotecommand.Executor, error){
	"spdy": func(h *kubeletHarness, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(h.config, http.MethodPost, u)
	},
	"websocket": func(h *kubeletHarness, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutor(h.config, http.MethodGet, u.String())
	},
	"fallback": func(h *kubeletHarness, u *url.URL) (remotecommand.Executor, error) {
		ws, err := remotecommand.NewWebSocketExecutor(h.config, http.MethodGet, u.String())
		if err != nil {
			return nil, err
		}
		sp, err := remotecommand.NewSPDYExecutor(h.config, http.MethodPost, u)
		if err != nil {
			return nil, err
		}
		return remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		})
	},
}

// execURL is the pods/exec or attach URL for the options, as kubectl
// builds it.
func execURL(h *kubeletHarness, ns, pod, sub string, opts *v1.PodExecOptions) *url.URL {
	req := h.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource(sub)
	if sub == "attach" {
		return req.VersionedParams(&v1.PodAttachOptions{Container: opts.Container, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, TTY: opts.TTY}, scheme.ParameterCodec).URL()
	}
	return req.VersionedParams(opts, scheme.ParameterCodec).URL()
}

func TestExecAndAttachReachTheKubeletOverSPDY(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	tests := []struct {
		name, sub       string
		command         []string
		stdin, tty      bool
		stdout, stderr  string
		exitCode        int
		kubeletQueryTTY string
	}{
		{name: "cat", sub: "exec", command: []string{"cat"}, stdin: true, stdout: "hello\n"},
		{name: "echo", sub: "exec", command: []string{"echo", "hi there"}, stdout: "echo hi there\n"},
		{name: "exit code", sub: "exec", command: []string{"fail", "3"}, stderr: "failing\n", exitCode: 3},
		{name: "tty", sub: "exec", command: []string{"cat"}, stdin: true, tty: true, stdout: "hello\n"},
		{name: "attach", sub: "attach", stdin: true, stdout: "hello\n"},
		{name: "attach without stdin", sub: "attach", stdout: "attached\n"},
	}
	for execName, newExecutor := range executors {
		for _, tc := range tests {
			t.Run(execName+"/"+tc.name, func(t *testing.T) {
				u := execURL(h, ns, "web", tc.sub, &v1.PodExecOptions{Command: tc.command, Stdin: tc.stdin, Stdout: true, Stderr: !tc.tty, TTY: tc.tty})
				ex, err := newExecutor(h, u)
				if err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
				if !tc.tty {
					opts.Stderr = &stderr
				}
				if tc.stdin {
					opts.Stdin = strings.NewReader("hello\n")
				}
				err = ex.StreamWithContext(ctxT(t), opts)
				var exitErr exec.CodeExitError
				switch {
				case tc.exitCode == 0 && err != nil:
					t.Fatalf("stream: %v", err)
				case tc.exitCode != 0 && (!errors.As(err, &exitErr) || exitErr.ExitStatus() != tc.exitCode):
					t.Fatalf("stream: got %v, want exit code %d", err, tc.exitCode)
				}
				if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
					t.Errorf("got stdout %q stderr %q, want %q %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
				}
				checkStreamRequest(t, h, "/"+tc.sub+"/"+ns+"/web/c", tc.command, tc.stdin, tc.tty)
			})
		}
	}
}

// checkStreamRequest checks the kubelet's last request on path: a SPDY
// upgrade (WebSocket clients' sessions are translated), with the stream
// parameters named the kubelet's way and the API server's certificate.
func checkStreamRequest(t *testing.T, h *kubeletHarness, path string, command []string, stdin, tty bool) {
	t.Helper()
	req, ok := h.kubelet.Last(path)
	if !ok {
		t.Fatalf("no request for %s reached the kubelet", path)
	}
	want := url.Values{"output": {"1"}, "error": {"1"}}
	if len(command) > 0 {
		want["command"] = command
	}
	if stdin {
		want.Set("input", "1")
	}
	if tty {
		want.Set("tty", "1")
	}
	if req.Method != http.MethodPost || req.Upgrade != "SPDY/3.1" || req.Query.Encode() != want.Encode() {
		t.Errorf("kubelet request: got %s upgrade %q query %q, want POST SPDY/3.1 %q", req.Method, req.Upgrade, req.Query.Encode(), want.Encode())
	}
	if req.ClientCN != pki.KubeletClientUser {
		t.Errorf("kubelet request: client certificate CN %q", req.ClientCN)
	}
}

func TestExecErrors(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "pending", "", "c")
	h.addPod(t, ns, "two", "n1", "a", "b")
	tests := []struct{ pod, msg string }{
		{"pending", "pod pending does not have a host assigned"},
		{"two", "a container name must be specified for pod two, choose one of: [a b]"},
		{"missing", `pods "missing" not found`},
	}
	for execName, newExecutor := range executors {
		for _, tc := range tests {
			ex, err := newExecutor(h, execURL(h, ns, tc.pod, "exec", &v1.PodExecOptions{Command: []string{"true"}, Stdout: true}))
			if err != nil {
				t.Fatal(err)
			}
			// Clients report the refused upgrade with the status's message
			// (kubectl: "error: unable to upgrade connection: <message>").
			err = ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdout: io.Discard})
			if err == nil || !strings.HasSuffix(err.Error(), ": "+tc.msg) {
				t.Errorf("%s %s: got %v, want %q", execName, tc.pod, err, tc.msg)
			}
		}
	}
}

func TestStreamsRefuseOtherMethodsAndPlainRequests(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	base := h.url + "/api/v1/namespaces/" + ns + "/pods/web/"
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPut, "exec?command=true", http.StatusMethodNotAllowed},
		{http.MethodPost, "exec?command=true", http.StatusBadRequest}, // no upgrade
		{http.MethodPost, "log", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: got %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.code)
		}
	}
}

// portForwarders dial pods/portforward as kubectl does: SPDY, and SPDY
// tunneled through a WebSocket.
var portForwarders = map[string]func(h *kubeletHarness, u *url.URL) (streamhttp.Dialer, error){
	"spdy": func(h *kubeletHarness, u *url.URL) (streamhttp.Dialer, error) {
		transport, upgrader, err := spdy.RoundTripperFor(h.config)
		if err != nil {
			return nil, err
		}
		return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), nil
	},
	"websocket": func(h *kubeletHarness, u *url.URL) (streamhttp.Dialer, error) {
		return portforward.NewSPDYOverWebsocketDialerForStreaming(u, h.config)
	},
}

func TestPortForwardCarriesBytesBothWays(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	u := h.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web").SubResource("portforward").URL()
	for name, newDialer := range portForwarders {
		t.Run(name, func(t *testing.T) {
			dialer, err := newDialer(h, u)
			if err != nil {
				t.Fatal(err)
			}
			local := forwardPort(t, dialer)
			conn, err := net.DialTimeout("tcp", local, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			for _, msg := range []string{"ping\n", "pong pong\n"} {
				if _, err := io.WriteString(conn, msg); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
					t.Fatalf("echo: got %q, %v; want %q", got, err, msg)
				}
			}
			req, ok := h.kubelet.Last("/portForward/" + ns + "/web")
			if !ok || req.Upgrade != "SPDY/3.1" || len(req.Protocols) == 0 || req.Protocols[0] != "portforward.k8s.io" || req.ClientCN != pki.KubeletClientUser {
				t.Errorf("kubelet request: %+v", req)
			}
		})
	}
}

// forwardPort forwards a free local port to the pod's port 8080 and
// returns its address.
func forwardPort(t *testing.T, dialer streamhttp.Dialer) string {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-errc })
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward not ready")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports: %v, %v", ports, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
}

func TestWebSocketUpgradeFailuresLetKubectlFallBack(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := down.Addr().(*net.TCPAddr).Port
	down.Close() // nothing listens there any more
	h.addNode(t, "down", "127.0.0.1", int32(port))
	h.addPod(t, ns, "web", "down", "c")
	u := h.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web").SubResource("portforward").URL()
	dialer, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, h.config)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = dialer.Dial("portforward.k8s.io")
	if !streamhttp.IsUpgradeFailure(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("tunnel to an unreachable kubelet: got %v, want an upgrade failure naming the dial error", err)
	}
}

func TestOlderWebSocketProtocolsGoEndToEnd(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	u := execURL(h, ns, "web", "exec", &v1.PodExecOptions{Command: []string{"line"}, Stdin: true, Stdout: true})
	ex, err := remotecommand.NewWebSocketExecutorForProtocols(h.config, http.MethodGet, u.String(), "v4.channel.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	err = ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdin: strings.NewReader("through\n"), Stdout: &stdout, Stderr: io.Discard})
	if err != nil || stdout.String() != "through\n" {
		t.Fatalf("v4 WebSocket exec: got %q, %v", stdout.String(), err)
	}
	req, ok := h.kubelet.Last("/exec/" + ns + "/web/c")
	if !ok || req.Method != http.MethodGet || !strings.EqualFold(req.Upgrade, "websocket") || req.ClientCN != pki.KubeletClientUser {
		t.Errorf("kubelet request: %+v, want the client's WebSocket upgrade", req)
	}
}

// slowWriter takes its time, as a client on a slow link does.
type slowWriter struct{ buf bytes.Buffer }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return w.buf.Write(p)
}

// The translated session ends only once the client has read everything:
// a large output reaches a slow client whole.
func TestWebSocketExecLargeOutputToASlowClient(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	const size = 4 << 20
	ex, err := executors["websocket"](h, execURL(h, ns, "web", "exec", &v1.PodExecOptions{Command: []string{"big", strconv.Itoa(size)}, Stdout: true}))
	if err != nil {
		t.Fatal(err)
	}
	var out slowWriter
	if err := ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if got := out.buf.Bytes(); !bytes.Equal(got, kubelettest.Pattern(size)) {
		t.Errorf("got %d bytes, want the %d the command wrote", len(got), size)
	}
}

// oneSize reports one terminal size, then none.
type oneSize struct{ sent bool }

func (q *oneSize) Next() *remotecommand.TerminalSize {
	if q.sent {
		return nil
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 80, Height: 24}
}

func TestTerminalResizesReachTheKubelet(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	for name, newExecutor := range executors {
		ex, err := newExecutor(h, execURL(h, ns, "web", "exec", &v1.PodExecOptions{Command: []string{"size"}, Stdout: true, TTY: true}))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &oneSize{}})
		if err != nil || out.String() != "80x24\n" {
			t.Errorf("%s: got %q, %v; want the size the client sent", name, out.String(), err)
		}
	}
}

// A WebSocket exec is a GET, authorized as "get" in front of the proxy;
// the proxy checks "create" too, as upstream (kubernetes#133515).
func TestStreamsAuthorizeCreateForGet(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	for _, name := range []string{"websocket", "spdy"} {
		ex, err := executors[name](h, execURL(h, ns, "web", "exec", &v1.PodExecOptions{Command: []string{"echo"}, Stdout: true}))
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdout: io.Discard}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	h.objects.mu.Lock()
	defer h.objects.mu.Unlock()
	if len(h.objects.checked) != 1 || h.objects.checked[0].Verb != "create" || h.objects.checked[0].Subresource != "exec" || h.objects.checked[0].Name != "web" {
		t.Errorf("secondary checks: %+v, want one create of pods/exec web (the GET's)", h.objects.checked)
	}
}
