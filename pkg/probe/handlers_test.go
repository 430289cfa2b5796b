package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// probeTimeout is the timeout of handler runs that are expected to finish
// on their own: long, so that a slow machine never turns them into
// timeouts.
const probeTimeout = 20 * time.Second

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), port
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// httpProbe builds the request for a against srv and runs it.
func httpProbe(t *testing.T, srvURL string, a v1.HTTPGetAction, timeout time.Duration) (Outcome, string) {
	t.Helper()
	host, port := hostPort(t, srvURL)
	req, err := HTTPRequest(context.Background(), &a, host, port)
	if err != nil {
		t.Fatal(err)
	}
	out, msg, err := HTTP(req, timeout)
	if err != nil {
		t.Fatalf("HTTP returned an error: %v", err)
	}
	return out, msg
}

func TestHTTPRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		action   v1.HTTPGetAction
		host     string
		port     int
		wantURL  string
		wantHost string
	}{
		{"defaults", v1.HTTPGetAction{}, "10.0.0.5", 8080, "http://10.0.0.5:8080/", ""},
		{"path and query", v1.HTTPGetAction{Path: "/healthz?verbose=1"}, "10.0.0.5", 80, "http://10.0.0.5:80/healthz?verbose=1", ""},
		{"path without slash", v1.HTTPGetAction{Path: "healthz"}, "10.0.0.5", 80, "http://10.0.0.5:80/healthz", ""},
		{"https", v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Path: "/x"}, "10.0.0.5", 443, "https://10.0.0.5:443/x", ""},
		{"host field", v1.HTTPGetAction{Host: "example.com", Path: "/"}, "10.0.0.5", 80, "http://example.com:80/", ""},
		{"ipv6", v1.HTTPGetAction{Path: "/"}, "fd00::5", 80, "http://[fd00::5]:80/", ""},
		{"host header", v1.HTTPGetAction{HTTPHeaders: []v1.HTTPHeader{{Name: "host", Value: "vhost.example"}}}, "10.0.0.5", 80, "http://10.0.0.5:80/", "vhost.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := HTTPRequest(context.Background(), &tc.action, tc.host, tc.port)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.wantURL {
				t.Errorf("URL = %q, want %q", got, tc.wantURL)
			}
			if req.Method != http.MethodGet {
				t.Errorf("method = %s", req.Method)
			}
			if tc.wantHost == "" {
				tc.wantHost = req.URL.Host
			}
			if req.Host != tc.wantHost {
				t.Errorf("Host = %q, want %q", req.Host, tc.wantHost)
			}
			if got := req.Header.Get("User-Agent"); got != UserAgent {
				t.Errorf("User-Agent = %q", got)
			}
			if got := req.Header.Get("Accept"); got != "*/*" {
				t.Errorf("Accept = %q", got)
			}
		})
	}
}

func TestHTTPSuccessWithBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "all good")
	}))
	defer srv.Close()
	out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Path: "/healthz"}, probeTimeout)
	if out != OutcomeSuccess || msg != "all good" {
		t.Errorf("got %v %q, want success %q", out, msg, "all good")
	}
}

func TestHTTPStatusCodes(t *testing.T) {
	for _, tc := range []struct {
		code    int
		want    Outcome
		wantMsg string
	}{
		{200, OutcomeSuccess, "body"},
		{204, OutcomeSuccess, ""},
		{299, OutcomeSuccess, "body"},
		{400, OutcomeFailure, "HTTP probe failed with statuscode: 400"},
		{404, OutcomeFailure, "HTTP probe failed with statuscode: 404"},
		{500, OutcomeFailure, "HTTP probe failed with statuscode: 500"},
		{503, OutcomeFailure, "HTTP probe failed with statuscode: 503"},
	} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				fmt.Fprint(w, "body")
			}))
			defer srv.Close()
			out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{}, probeTimeout)
			if out != tc.want || msg != tc.wantMsg {
				t.Errorf("got %v %q, want %v %q", out, msg, tc.want, tc.wantMsg)
			}
		})
	}
}

func TestHTTPRedirects(t *testing.T) {
	var otherHits, okHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		okHits.Add(1)
		fmt.Fprint(w, "landed")
	})
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, port := hostPort(t, srv.URL)
	// "localhost" is another host name for the same server: the prober must
	// not follow the redirect, so /ok is never reached through it.
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Header().Set("Location", fmt.Sprintf("http://localhost:%d/ok", port))
		w.WriteHeader(http.StatusFound)
		fmt.Fprint(w, "moved away")
	})

	t.Run("other host", func(t *testing.T) {
		okHits.Store(0)
		out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Path: "/other"}, probeTimeout)
		if out != OutcomeWarning {
			t.Errorf("outcome = %v, want warning", out)
		}
		if want := "Probe terminated redirects, Response body: moved away"; msg != want {
			t.Errorf("message = %q, want %q", msg, want)
		}
		if otherHits.Load() != 1 || okHits.Load() != 0 {
			t.Errorf("hits: /other %d, /ok %d; want 1, 0", otherHits.Load(), okHits.Load())
		}
	})
	t.Run("same host", func(t *testing.T) {
		okHits.Store(0)
		out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Path: "/same"}, probeTimeout)
		if out != OutcomeSuccess || msg != "landed" {
			t.Errorf("got %v %q, want success %q", out, msg, "landed")
		}
		if okHits.Load() != 1 {
			t.Errorf("/ok hits = %d", okHits.Load())
		}
	})
	t.Run("too many", func(t *testing.T) {
		out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Path: "/loop"}, probeTimeout)
		if out != OutcomeFailure || !strings.Contains(msg, "stopped after 10 redirects") {
			t.Errorf("got %v %q, want failure after 10 redirects", out, msg)
		}
	})
}

func TestHTTPHeadersSeenByServer(t *testing.T) {
	type seen struct {
		host   string
		header http.Header
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.Header.Clone()}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	serverHost := net.JoinHostPort(host, strconv.Itoa(port))

	for _, tc := range []struct {
		name    string
		headers []v1.HTTPHeader
		host    string
		want    map[string][]string // nil value: absent
	}{
		{
			name: "defaults",
			host: serverHost,
			want: map[string][]string{
				"User-Agent": {"kube-probe/1.37"}, "Accept": {"*/*"}, "Accept-Encoding": nil,
			},
		},
		{
			name: "custom and host",
			headers: []v1.HTTPHeader{
				{Name: "Host", Value: "vhost.example"},
				{Name: "X-Custom", Value: "a"},
				{Name: "x-custom", Value: "b"},
			},
			host: "vhost.example",
			want: map[string][]string{
				"User-Agent": {"kube-probe/1.37"}, "Accept": {"*/*"}, "X-Custom": {"a", "b"},
			},
		},
		{
			name:    "user agent and accept overridden",
			headers: []v1.HTTPHeader{{Name: "user-agent", Value: "my-probe"}, {Name: "Accept", Value: "application/json"}},
			host:    serverHost,
			want:    map[string][]string{"User-Agent": {"my-probe"}, "Accept": {"application/json"}},
		},
		{
			name:    "empty accept removes it",
			headers: []v1.HTTPHeader{{Name: "Accept", Value: ""}},
			host:    serverHost,
			want:    map[string][]string{"User-Agent": {"kube-probe/1.37"}, "Accept": nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Path: "/", HTTPHeaders: tc.headers}, probeTimeout)
			if out != OutcomeSuccess {
				t.Fatalf("got %v %q", out, msg)
			}
			s := <-got
			if s.host != tc.host {
				t.Errorf("Host = %q, want %q", s.host, tc.host)
			}
			for k, want := range tc.want {
				if g := s.header.Values(k); strings.Join(g, ",") != strings.Join(want, ",") || (want == nil) != (g == nil) {
					t.Errorf("%s = %q, want %q", k, g, want)
				}
			}
		})
	}
}

func TestHTTPSSelfSigned(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Error("not TLS")
		}
		fmt.Fprint(w, "secure")
	}))
	defer srv.Close()
	out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS}, probeTimeout)
	if out != OutcomeSuccess || msg != "secure" {
		t.Errorf("got %v %q", out, msg)
	}
	// The same server probed over plain HTTP answers 400.
	out, msg = httpProbe(t, srv.URL, v1.HTTPGetAction{Scheme: v1.URISchemeHTTP}, probeTimeout)
	if out != OutcomeFailure || msg != "HTTP probe failed with statuscode: 400" {
		t.Errorf("plain HTTP to a TLS server: got %v %q", out, msg)
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	port := closedPort(t)
	req, err := HTTPRequest(context.Background(), &v1.HTTPGetAction{Path: "/"}, "127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	out, msg, err := HTTP(req, probeTimeout)
	if err != nil {
		t.Fatalf("error %v: a refused connection is a failure, not an error", err)
	}
	if out != OutcomeFailure || !strings.Contains(msg, "connection refused") || !strings.Contains(msg, strconv.Itoa(port)) {
		t.Errorf("got %v %q", out, msg)
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{}, 50*time.Millisecond)
	if out != OutcomeFailure || !strings.Contains(msg, "Client.Timeout exceeded") {
		t.Errorf("got %v %q, want a timeout failure", out, msg)
	}
}

func TestHTTPBodyTruncated(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 3*maxOutput))
	}))
	defer srv.Close()
	out, msg := httpProbe(t, srv.URL, v1.HTTPGetAction{}, probeTimeout)
	if out != OutcomeSuccess || len(msg) != 10*1024 {
		t.Errorf("got %v with %d bytes, want success with 10 KiB", out, len(msg))
	}
}

func TestHTTPRequestContextCanceled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := HTTPRequest(ctx, &v1.HTTPGetAction{}, host, port)
	if err != nil {
		t.Fatal(err)
	}
	if out, msg, _ := HTTP(req, probeTimeout); out != OutcomeFailure || !strings.Contains(msg, "context canceled") {
		t.Errorf("got %v %q", out, msg)
	}
}

func TestTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	out, msg, err := TCP(context.Background(), "127.0.0.1", port, probeTimeout)
	if err != nil || out != OutcomeSuccess || msg != "" {
		t.Errorf("listening port: got %v %q %v", out, msg, err)
	}

	closed := closedPort(t)
	out, msg, err = TCP(context.Background(), "127.0.0.1", closed, probeTimeout)
	if err != nil {
		t.Fatalf("error %v: a closed port is a failure, not an error", err)
	}
	if out != OutcomeFailure || !strings.Contains(msg, "connection refused") {
		t.Errorf("closed port: got %v %q", out, msg)
	}
}

// grpcServer serves svc (registering the health service when hs is set)
// on a local port and returns the port.
func grpcServer(t *testing.T, register func(*grpc.Server)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

// blockingHealth never answers before the call's deadline.
type blockingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (blockingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func TestGRPC(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("good", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("bad", healthpb.HealthCheckResponse_NOT_SERVING)
	withHealth := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	without := grpcServer(t, func(*grpc.Server) {})
	notServing := health.NewServer()
	notServing.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	down := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, notServing) })
	closed := closedPort(t)

	for _, tc := range []struct {
		name    string
		port    int
		service string
		want    Outcome
		msg     string // exact, or a prefix when prefix is set
		prefix  bool
	}{
		{"serving", withHealth, "", OutcomeSuccess, "", false},
		{"named service serving", withHealth, "good", OutcomeSuccess, "", false},
		{"named service not serving", withHealth, "bad", OutcomeFailure, `service unhealthy (responded with "NOT_SERVING")`, false},
		{"not serving", down, "", OutcomeFailure, `service unhealthy (responded with "NOT_SERVING")`, false},
		{"unknown service", withHealth, "nope", OutcomeFailure, "error: health rpc probe failed: rpc error: code = NotFound", true},
		{"no health service", without, "", OutcomeFailure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health", false},
		{"nothing listening", closed, "", OutcomeFailure, fmt.Sprintf("error: failed to connect service at %q: ", net.JoinHostPort("127.0.0.1", strconv.Itoa(closed))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, msg, err := GRPC(context.Background(), "127.0.0.1", tc.port, tc.service, probeTimeout)
			if err != nil {
				t.Fatalf("error %v: gRPC probes only fail", err)
			}
			if out != tc.want {
				t.Errorf("outcome = %v, want %v (%q)", out, tc.want, msg)
			}
			if (tc.prefix && !strings.HasPrefix(msg, tc.msg)) || (!tc.prefix && msg != tc.msg) {
				t.Errorf("message = %q, want %q", msg, tc.msg)
			}
		})
	}
}

func TestGRPCTimeout(t *testing.T) {
	port := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, blockingHealth{}) })
	out, msg, err := GRPC(context.Background(), "127.0.0.1", port, "", 100*time.Millisecond)
	if err != nil || out != OutcomeFailure || msg != "timeout: health rpc did not complete within 100ms" {
		t.Errorf("got %v %q %v", out, msg, err)
	}
}

func TestExec(t *testing.T) {
	deadline := status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")
	cmd := []string{"sh", "-c", "check"}
	for _, tc := range []struct {
		name    string
		res     *runtime.ExecResult
		err     error
		want    Outcome
		wantOut string
		wantErr bool
	}{
		{"exit 0", &runtime.ExecResult{Stdout: []byte("fine\n")}, nil, OutcomeSuccess, "fine\n", false},
		{"exit 0 stdout and stderr", &runtime.ExecResult{Stdout: []byte("out "), Stderr: []byte("err")}, nil, OutcomeSuccess, "out err", false},
		{"exit 1", &runtime.ExecResult{Stdout: []byte("bad"), Stderr: []byte(" worse"), ExitCode: 1}, nil, OutcomeFailure, "bad worse", false},
		{"exit 137", &runtime.ExecResult{ExitCode: 137}, nil, OutcomeFailure, "", false},
		{"grpc deadline exceeded", nil, deadline, OutcomeFailure, `command "sh -c check" timed out`, false},
		{"wrapped grpc deadline exceeded", nil, fmt.Errorf("exec in container c1: %w", deadline), OutcomeFailure, `command "sh -c check" timed out`, false},
		{"context deadline exceeded", nil, fmt.Errorf("exec: %w", context.DeadlineExceeded), OutcomeFailure, `command "sh -c check" timed out`, false},
		{"other error", nil, errors.New("container not found"), OutcomeUnknown, "", true},
		{"other grpc error", nil, status.Error(codes.NotFound, "no such container"), OutcomeUnknown, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &funcExec{}
			ex.set(func(string, []string) (*runtime.ExecResult, error) { return tc.res, tc.err })
			out, msg, err := Exec(context.Background(), ex, "c1", cmd, 3*time.Second)
			if out != tc.want || msg != tc.wantOut || (err != nil) != tc.wantErr {
				t.Errorf("got %v %q %v, want %v %q error=%v", out, msg, err, tc.want, tc.wantOut, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, tc.err) {
				t.Errorf("error %v does not wrap %v", err, tc.err)
			}
			if ex.lastID != "c1" || strings.Join(ex.lastCmd, " ") != "sh -c check" || ex.lastTO != 3*time.Second {
				t.Errorf("ExecSync(%q, %q, %v)", ex.lastID, ex.lastCmd, ex.lastTO)
			}
		})
	}
}

func TestExecOutputTruncated(t *testing.T) {
	for _, code := range []int32{0, 1} {
		ex := &funcExec{}
		ex.set(func(string, []string) (*runtime.ExecResult, error) {
			return &runtime.ExecResult{Stdout: []byte(strings.Repeat("o", 8<<10)), Stderr: []byte(strings.Repeat("e", 8<<10)), ExitCode: code}, nil
		})
		_, msg, _ := Exec(context.Background(), ex, "c1", []string{"x"}, time.Second)
		if len(msg) != 10240 || !strings.HasPrefix(msg, strings.Repeat("o", 8<<10)+"e") {
			t.Errorf("exit %d: output of %d bytes, want the first 10 KiB", code, len(msg))
		}
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{
		{Name: "http", ContainerPort: 8080},
		{Name: "metrics", ContainerPort: 9090},
		{Name: "zero"},
	}}
	for _, tc := range []struct {
		port    intstr.IntOrString
		want    int
		wantErr string
	}{
		{intstr.FromInt32(80), 80, ""},
		{intstr.FromInt32(65535), 65535, ""},
		{intstr.FromString("http"), 8080, ""},
		{intstr.FromString("metrics"), 9090, ""},
		{intstr.FromString("8443"), 8443, ""}, // a number written as a string
		{intstr.FromString("grpc"), 0, "port grpc not found"},
		{intstr.FromString(""), 0, "port  not found"},
		{intstr.FromString("zero"), 0, "invalid port number: 0"},
		{intstr.FromString("70000"), 0, "invalid port number: 70000"},
		{intstr.FromInt32(0), 0, "invalid port number: 0"},
		{intstr.FromInt32(-1), 0, "invalid port number: -1"},
		{intstr.FromInt32(65536), 0, "invalid port number: 65536"},
	} {
		got, err := ResolvePort(tc.port, c)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ResolvePort(%s) = %d, %v; want error %q", tc.port.String(), got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ResolvePort(%s) = %d, %v; want %d", tc.port.String(), got, err, tc.want)
		}
	}
	// A container without ports resolves only numbers.
	if _, err := ResolvePort(intstr.FromString("http"), &v1.Container{Name: "bare"}); err == nil {
		t.Error("named port of a container without ports resolved")
	}
}
