package kubeletproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	gwebsocket "github.com/gorilla/websocket"
	pfconst "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// maxRelayedBody bounds the kubelet answer relayed when it refuses the
// upgrade.
const maxRelayedBody = 64 << 10

// tunnelPortForward serves kubectl port-forward's WebSocket attempt
// (subprotocol SPDY/3.1+portforward.k8s.io), in which the client speaks
// SPDY inside WebSocket binary messages. As upstream's TunnelingHandler,
// the API server upgrades to SPDY at the kubelet first and only then
// accepts the WebSocket, so that a kubelet's refusal reaches the client
// as a failed handshake, which makes kubectl fall back to plain SPDY.
func tunnelPortForward(w http.ResponseWriter, r *http.Request, loc *url.URL, transport *http.Transport) {
	protocols := tunneledProtocols(r)
	if len(protocols) == 0 {
		http.Error(w, "unable to upgrade: no tunneling spdy protocols provided", http.StatusBadRequest)
		return
	}
	backend, resp, err := dialSPDY(r, loc, transport, protocols)
	if err != nil {
		proxyResponder{}.Error(w, r, err)
		return
	}
	defer backend.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		relayResponse(w, resp)
		return
	}
	if !strings.EqualFold(resp.Header.Get(httpstream.HeaderUpgrade), spdy.HeaderSpdy31) {
		http.Error(w, "unable to upgrade: missing upgrade headers in response", http.StatusInternalServerError)
		return
	}
	var accepted []string
	if p := strings.TrimSpace(resp.Header.Get(httpstream.HeaderProtocolVersion)); p != "" {
		accepted = []string{pfconst.WebsocketsSPDYTunnelingPrefix + p}
	}
	upgrader := gwebsocket.Upgrader{Subprotocols: accepted, CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered the client
	}
	tunnel := portforward.NewTunnelingConnection("server", conn)
	defer tunnel.Close()
	pipe(tunnel, backend)
}

// tunneledProtocols lists the SPDY protocols the client offers, from its
// "SPDY/3.1+<protocol>" WebSocket subprotocols.
func tunneledProtocols(r *http.Request) []string {
	var out []string
	for _, p := range gwebsocket.Subprotocols(r) {
		if strings.HasPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix) && strings.HasSuffix(p, pfconst.KubernetesSuffix) {
			out = append(out, strings.TrimPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix))
		}
	}
	return out
}

// dialSPDY sends a SPDY/3.1 upgrade request offering protocols to the
// kubelet and reads its answer. The connection returned reads on from
// the bytes buffered after the answer's header.
func dialSPDY(r *http.Request, loc *url.URL, transport *http.Transport, protocols []string) (net.Conn, *http.Response, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, loc.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("SPDY upgrade request: %w", err)
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	req.Header.Set("User-Agent", r.UserAgent())
	conn, err := proxy.DialURL(r.Context(), loc, transport)
	if err != nil {
		return nil, nil, fmt.Errorf("error dialing backend: %w", err)
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("error sending request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("reading the kubelet's upgrade response: %w", err)
	}
	return &bufferedConn{Conn: conn, r: br}, resp, nil
}

// bufferedConn reads through the reader that holds what followed the
// response header.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// hopHeaders describe the kubelet's connection, not the answer relayed.
var hopHeaders = []string{"Connection", "Content-Length", "Keep-Alive", "Transfer-Encoding", "Upgrade"}

// relayResponse passes a kubelet's refusal on as the answer.
func relayResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if slices.Contains(hopHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxRelayedBody))
}

// pipe copies both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { a.Close(); b.Close() }) }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer closeBoth(); _, _ = io.Copy(a, b) }()
	go func() { defer wg.Done(); defer closeBoth(); _, _ = io.Copy(b, a) }()
	wg.Wait()
}
