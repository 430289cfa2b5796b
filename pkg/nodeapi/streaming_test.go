package nodeapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// streamingBackend plays the runtime's streaming server: it upgrades with
// the first offered subprotocol, then answers what it reads upper-cased.
type streamingBackend struct {
	*httptest.Server
	requests chan *http.Request
}

func newStreamingBackend(t *testing.T) *streamingBackend {
	b := &streamingBackend{requests: make(chan *http.Request, 4)}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests <- r.Clone(r.Context())
		upgrade, header, protocols := r.Header.Get("Upgrade"), "X-Stream-Protocol-Version", r.Header.Values("X-Stream-Protocol-Version")
		if strings.EqualFold(upgrade, "websocket") {
			header, protocols = "Sec-WebSocket-Protocol", strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ", ")
		}
		if upgrade == "" || len(protocols) == 0 {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n\r\n", upgrade, header, protocols[0])
		buf := make([]byte, 5)
		if _, err := io.ReadFull(rw, buf); err == nil {
			conn.Write(bytes.ToUpper(buf))
		}
	}))
	t.Cleanup(b.Close)
	return b
}

func streamingFixture(t *testing.T) (*fakeRuntime, *httptest.Server, *streamingBackend) {
	t.Helper()
	backend := newStreamingBackend(t)
	rt := &fakeRuntime{url: backend.URL + "/exec/Tok3n", sandboxes: []*criv1.PodSandbox{
		{Id: "sb-old", State: criv1.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: 3, Labels: map[string]string{runtime.LabelPodUID: "uid-1"}},
		{Id: "sb-1", State: criv1.PodSandboxState_SANDBOX_READY, CreatedAt: 2, Labels: map[string]string{runtime.LabelPodUID: "uid-1"}},
		{Id: "sb-0", State: criv1.PodSandboxState_SANDBOX_READY, CreatedAt: 1, Labels: map[string]string{runtime.LabelPodUID: "uid-1"}},
		{Id: "other", State: criv1.PodSandboxState_SANDBOX_READY, CreatedAt: 9, Labels: map[string]string{runtime.LabelPodUID: "uid-2"}},
	}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	pod.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "term", TTY: true, Stdin: true}, {Name: "done"}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://c-app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		{Name: "term", ContainerID: "containerd://c-term", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		{Name: "done", ContainerID: "containerd://c-done", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
	}
	front := httptest.NewServer(openServer(t, podList{pod}, rt).Handler())
	t.Cleanup(front.Close)
	return rt, front, backend
}

// upgrade sends an upgrade request over a raw connection and returns the
// response and the connection.
func upgrade(t *testing.T, front *httptest.Server, method, target string, headers ...string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: node1:10250\r\n%s\r\n\r\n", method, target, strings.Join(headers, "\r\n"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, conn, br
}

var spdyHeaders = []string{"Connection: Upgrade", "Upgrade: SPDY/3.1",
	"X-Stream-Protocol-Version: v5.channel.k8s.io", "X-Stream-Protocol-Version: v4.channel.k8s.io"}

func roundTrip(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "HELLO" {
		t.Fatalf("read %q (%v) back through the proxy, want HELLO", buf, err)
	}
}

func TestExecProxiesTheUpgradedConnection(t *testing.T) {
	rt, front, backend := streamingFixture(t)
	resp, conn, br := upgrade(t, front, "POST", "/exec/shop/web/app?command=sh&command=-c&command=echo+hi&input=1&output=1&error=1", spdyHeaders...)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Stream-Protocol-Version") != "v5.channel.k8s.io" {
		t.Fatalf("response %d %v, want 101 with the chosen protocol", resp.StatusCode, resp.Header)
	}
	roundTrip(t, conn, br)
	got := <-backend.requests
	if got.URL.Path != "/exec/Tok3n" || !slices.Equal(got.Header.Values("X-Stream-Protocol-Version"), []string{"v5.channel.k8s.io", "v4.channel.k8s.io"}) {
		t.Errorf("backend got %s with protocols %v", got.URL.Path, got.Header.Values("X-Stream-Protocol-Version"))
	}
	want := &criv1.ExecRequest{ContainerId: "c-app", Cmd: []string{"sh", "-c", "echo hi"}, Stdin: true, Stdout: true, Stderr: true}
	if len(rt.execs) != 1 || rt.execs[0].String() != want.String() {
		t.Errorf("CRI Exec got %v, want %v", rt.execs, want)
	}
}

func TestExecWithUIDAndTTY(t *testing.T) {
	rt, front, _ := streamingFixture(t)
	resp, conn, br := upgrade(t, front, "GET", "/exec/shop/web/uid-1/app?command=sh&input=1&output=1&error=1&tty=1", spdyHeaders...)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	roundTrip(t, conn, br)
	if r := rt.execs[0]; !r.Tty || r.Stderr {
		t.Errorf("tty exec: %v (a terminal has no separate stderr)", r)
	}
}

func TestAttachUsesTheSpecTTY(t *testing.T) {
	rt, front, _ := streamingFixture(t)
	resp, conn, br := upgrade(t, front, "POST", "/attach/shop/web/term?input=1&output=1&error=1", spdyHeaders...)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	roundTrip(t, conn, br)
	want := &criv1.AttachRequest{ContainerId: "c-term", Stdin: true, Stdout: true, Tty: true}
	if len(rt.attaches) != 1 || rt.attaches[0].String() != want.String() {
		t.Errorf("CRI Attach got %v, want %v", rt.attaches, want)
	}
}

func TestPortForwardWebSocket(t *testing.T) {
	rt, front, backend := streamingFixture(t)
	resp, conn, br := upgrade(t, front, "GET", "/portForward/shop/web?port=8080,9090&port=53",
		"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol: v4.channel.k8s.io, portforward.k8s.io")
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Protocol") != "v4.channel.k8s.io" {
		t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
	}
	roundTrip(t, conn, br)
	if got := (<-backend.requests).Header.Get("Sec-WebSocket-Protocol"); got != "v4.channel.k8s.io, portforward.k8s.io" {
		t.Errorf("backend got subprotocols %q", got)
	}
	want := &criv1.PortForwardRequest{PodSandboxId: "sb-1", Port: []int32{8080, 9090, 53}}
	if len(rt.forwards) != 1 || rt.forwards[0].String() != want.String() {
		t.Errorf("CRI PortForward got %v, want %v (the newest ready sandbox)", rt.forwards, want)
	}
}

func TestPortForwardSPDYHasNoPorts(t *testing.T) {
	rt, front, _ := streamingFixture(t)
	resp, conn, br := upgrade(t, front, "POST", "/portForward/shop/web/uid-1", "Connection: Upgrade", "Upgrade: SPDY/3.1",
		"X-Stream-Protocol-Version: portforward.k8s.io")
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Stream-Protocol-Version") != "portforward.k8s.io" {
		t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
	}
	roundTrip(t, conn, br)
	if len(rt.forwards) != 1 || len(rt.forwards[0].Port) != 0 || rt.forwards[0].PodSandboxId != "sb-1" {
		t.Errorf("CRI PortForward got %v", rt.forwards)
	}
}

func TestStreamingErrors(t *testing.T) {
	tests := []struct {
		name, method, target string
		streamErr            error
		headers              []string
		code                 int
		want                 string
	}{
		{"no stdio", "POST", "/exec/shop/web/app?command=sh", nil, spdyHeaders, 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"unknown pod", "POST", "/exec/shop/nope/app?command=sh&output=1", nil, spdyHeaders, 404, "pod does not exist"},
		{"wrong uid", "POST", "/exec/shop/web/uid-9/app?command=sh&output=1", nil, spdyHeaders, 404, "pod not found"},
		{"not running", "POST", "/exec/shop/web/done?command=sh&output=1", nil, spdyHeaders, 500, `container not found ("done")`},
		{"runtime not found", "POST", "/exec/shop/web/app?command=sh&output=1", status.Error(codes.NotFound, "gone"), spdyHeaders, 404, "gone"},
		{"runtime busy", "POST", "/exec/shop/web/app?command=sh&output=1", status.Error(codes.ResourceExhausted, "busy"), spdyHeaders, 429, "busy"},
		{"not an upgrade", "POST", "/exec/shop/web/app?command=sh&output=1", nil, nil, 500, "Upgrade request required"},
		{"websocket without ports", "GET", "/portForward/shop/web", nil, []string{"Connection: Upgrade", "Upgrade: websocket"}, 400, `query parameter "port" is required`},
		{"bad port", "GET", "/portForward/shop/web?port=0", nil, []string{"Connection: Upgrade", "Upgrade: websocket"}, 400, `port "0" must be > 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, front, _ := streamingFixture(t)
			rt.streamErr = tt.streamErr
			resp, _, br := upgrade(t, front, tt.method, tt.target, append(tt.headers, "Content-Length: 0")...)
			body, _ := io.ReadAll(io.LimitReader(br, int64(max(resp.ContentLength, 0))))
			if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.want) {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, body, tt.code, tt.want)
			}
			if tt.code == 429 && resp.Header.Get("Retry-After") != streamRetryAfter {
				t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
			}
		})
	}
}
