package kubelettest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Request is what the fake kubelet saw of one request.
type Request struct {
	Method, Path string
	Query        url.Values
	// ClientCN and ClientOrgs are the subject of the client certificate
	// ("" and nil without one).
	ClientCN   string
	ClientOrgs []string
	// Upgrade and Protocols are the Upgrade and X-Stream-Protocol-Version
	// headers.
	Upgrade   string
	Protocols []string
	// UserAgent tells the API server's own requests (WebSocket sessions
	// it translates to SPDY) from clients' requests it passes on.
	UserAgent string
}

// LogFunc answers /containerLogs/{namespace}/{pod}/{container}.
type LogFunc func(w http.ResponseWriter, r *http.Request, namespace, pod, container string)

// Server is a running fake kubelet.
type Server struct {
	*httptest.Server
	// Host and Port are where it listens, for the Node's status.
	Host string
	Port int32

	mu             sync.Mutex
	requests       []Request
	logs           LogFunc
	started        time.Time
	nodeLoad       Load
	containerLoads []ContainerLoad
}

// New starts a fake kubelet. With clientCAs, client certificates must
// chain to them (as a kubelet's --client-ca-file); requests without one
// are still served, their ClientCN empty. servingCert, when given, is
// what it serves instead of httptest's own certificate (one signed by the
// CA an API server verifies kubelets with).
func New(clientCAs *x509.CertPool, logs LogFunc, servingCert ...tls.Certificate) (*Server, error) {
	s := &Server{logs: logs, started: time.Now(), nodeLoad: DefaultNodeLoad}
	if s.logs == nil {
		s.logs = DefaultLogs
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		s.logs(w, r, r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"))
	})
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", serveExec)
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", serveAttach)
	mux.HandleFunc("/portForward/{namespace}/{pod}", servePortForward)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE kubelet_fake gauge\nkubelet_fake 1\n"))
	})
	mux.HandleFunc("GET /metrics/resource", s.serveResourceMetrics)
	s.Server = httptest.NewUnstartedServer(s.record(mux))
	s.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	if clientCAs != nil {
		s.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clientCAs}
	}
	s.TLS.Certificates = servingCert
	s.StartTLS()
	host, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("fake kubelet address: %w", err)
	}
	p, _ := strconv.Atoi(port)
	s.Host, s.Port = host, int32(p)
	return s, nil
}

// record notes every request before serving it.
func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
			Upgrade: r.Header.Get("Upgrade"), Protocols: r.Header.Values("X-Stream-Protocol-Version"), UserAgent: r.UserAgent()}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			req.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
			req.ClientOrgs = r.TLS.PeerCertificates[0].Subject.Organization
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Requests returns what has reached the fake so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the latest request whose path is path, and whether there
// was one.
func (s *Server) Last(path string) (Request, bool) {
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path == path {
			return reqs[i], true
		}
	}
	return Request{}, false
}

// DefaultLogs answers with two lines naming the container, and with the
// kubelet's 400 for a pod named "waiting", whose container has not
// started.
func DefaultLogs(w http.ResponseWriter, r *http.Request, namespace, pod, container string) {
	if pod == "waiting" {
		// As go-restful's WriteError in the kubelet: the text, no newline.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "container %q in pod %q is waiting to start: ContainerCreating", container, pod)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s/%s/%s line 1\n%s/%s/%s line 2\n", namespace, pod, container, namespace, pod, container)
}
