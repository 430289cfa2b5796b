package kubeletproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

func TestNodeProxy(t *testing.T) {
	h := newKubeletHarness(t, nil)
	otherPort := "9100"
	kubeletPort := strconv.Itoa(int(h.kubelet.Port))
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path, body string
		code       int
	}{
		{"/api/v1/nodes/n1/proxy/healthz", "ok", http.StatusOK},
		{"/api/v1/nodes/n1/proxy/metrics", "# TYPE kubelet_fake gauge\nkubelet_fake 1\n", http.StatusOK},
		{"/api/v1/nodes/n1:" + kubeletPort + "/proxy/healthz", "ok", http.StatusOK},
		{"/api/v1/nodes/n1/proxy?path=%2Fhealthz", "ok", http.StatusOK},
		{"/api/v1/nodes/n1:" + otherPort + "/proxy/x/y?a=b", "", http.StatusBadRequest}, // n1 is on loopback
		{"/api/v1/nodes/n1/proxy", "", http.StatusMovedPermanently},
		{"/api/v1/nodes/missing/proxy/healthz", "", http.StatusNotFound},
		{"/api/v1/nodes/n1/proxy/nothing-here", "", http.StatusNotFound},
	}
	for _, tc := range tests {
		resp, err := noRedirects.Get(h.url + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.body != "" && string(body) != tc.body) {
			t.Errorf("GET %s: got %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
	if loc := mustGet(t, noRedirects, h.url+"/api/v1/nodes/n1/proxy").Header.Get("Location"); loc != "/api/v1/nodes/n1/proxy/" {
		t.Errorf("redirect: got Location %q", loc)
	}
	req, ok := h.kubelet.Last("/healthz")
	if !ok || req.ClientCN != pki.KubeletClientUser {
		t.Errorf("kubelet request: %+v, want the kubelet client certificate", req)
	}
}

func mustGet(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Another port of a node goes without the kubelet client certificate,
// and only to a node address that is not loopback or link-local.
func TestNodeProxyToAnotherPort(t *testing.T) {
	ip := hostUnicastIP(t)
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "other "+r.URL.RequestURI())
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	other.Listener = ln
	other.Start()
	defer other.Close()
	h := newKubeletHarness(t, nil)
	h.addNode(t, "n2", ip, h.kubelet.Port)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for path, want := range map[string]string{
		"/api/v1/nodes/n2:" + port + "/proxy/x/y?a=b":      "other /x/y?a=b",
		"/api/v1/nodes/http:n2:" + port + "/proxy/metrics": "other /metrics",
	} {
		resp, err := http.Get(h.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("GET %s: got %d %q, want %q", path, resp.StatusCode, body, want)
		}
	}
}

// hostUnicastIP is one of the host's global unicast IPv4 addresses.
func hostUnicastIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no global unicast address on this host")
	return ""
}
