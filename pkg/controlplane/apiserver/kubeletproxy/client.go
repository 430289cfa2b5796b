package kubeletproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultPort is the kubelet API port assumed when a node does not
// report its own (kube-apiserver's --kubelet-port).
const DefaultPort = 10250

// DefaultPreferredAddressTypes is the order in which a node's
// addresses are tried. kube-apiserver's flag default starts with Hostname;
// kubeadm overrides it with InternalIP,ExternalIP,Hostname because node
// host names often do not resolve from the control plane, and so do we.
// The DNS types, which kubeadm leaves out, come last.
var DefaultPreferredAddressTypes = []v1.NodeAddressType{
	v1.NodeInternalIP, v1.NodeExternalIP, v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS,
}

// ClientConfig is how the API server reaches the nodes' kubelet API
// for logs, exec, attach, port-forward, nodes/proxy and the resource
// metrics scrapes (kube-apiserver's --kubelet-* flags).
type ClientConfig struct {
	// CertPEM and KeyPEM are the client certificate presented to kubelets
	// (--kubelet-client-certificate, --kubelet-client-key); empty presents
	// none.
	CertPEM, KeyPEM []byte
	// RootCAs verifies the kubelets' serving certificates
	// (--kubelet-certificate-authority). Nil skips the verification, as
	// kube-apiserver does without that flag: kubelets serve self-signed
	// certificates by default.
	RootCAs *x509.CertPool
	// PreferredAddressTypes orders the node addresses tried; empty means
	// DefaultPreferredAddressTypes.
	PreferredAddressTypes []v1.NodeAddressType
	// Port is used for nodes that report no kubelet port; zero means
	// DefaultPort.
	Port int
}

// kubeletDialTimeout bounds connecting to a kubelet (kube-apiserver's
// --kubelet-timeout, 5s).
const kubeletDialTimeout = 5 * time.Second

// Client finds nodes' kubelet endpoints and holds the transports to them.
type Client struct {
	cfg ClientConfig
	// transport presents the client certificate and verifies kubelets as
	// configured; insecure does not verify them (insecureSkipTLSVerifyBackend
	// on pods/log); other is for node ports other than the kubelet's and
	// presents no certificate (upstream's proxy transport).
	transport, insecure, other *http.Transport
}

// NewClient makes the client cfg describes.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.PreferredAddressTypes) == 0 {
		cfg.PreferredAddressTypes = DefaultPreferredAddressTypes
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	var certs []tls.Certificate
	if len(cfg.CertPEM) > 0 || len(cfg.KeyPEM) > 0 {
		cert, err := tls.X509KeyPair(cfg.CertPEM, cfg.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("kubelet client certificate: %w", err)
		}
		certs = []tls.Certificate{cert}
	}
	return &Client{
		cfg:       cfg,
		transport: newKubeletTransport(&tls.Config{Certificates: certs, RootCAs: cfg.RootCAs, InsecureSkipVerify: cfg.RootCAs == nil}),
		insecure:  newKubeletTransport(&tls.Config{Certificates: certs, InsecureSkipVerify: true}),
		other:     newKubeletTransport(&tls.Config{InsecureSkipVerify: true}),
	}, nil
}

// newKubeletTransport speaks HTTP/1.1 only: the streams are connection
// upgrades, which HTTP/2 does not have. The dialer is set so that the
// upgrade-aware proxy dials with it (and its timeout) too. Kubelets are
// dialed directly, never through an HTTP proxy from the environment: the
// upgrade dial could not follow one.
func newKubeletTransport(tlsConfig *tls.Config) *http.Transport {
	tlsConfig.MinVersion = tls.VersionTLS12
	tlsConfig.NextProtos = []string{"http/1.1"}
	dialer := &net.Dialer{Timeout: kubeletDialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
}

// kubeletEndpoint is where one node's kubelet API listens.
type kubeletEndpoint struct {
	host string // address, as the node reports it
	port string
}

// url returns https://<host>:<port><path>?<query>.
func (e kubeletEndpoint) url(path string, query url.Values) *url.URL {
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(e.host, e.port), Path: path, RawQuery: query.Encode()}
}

// endpoint picks the node's kubelet address and port.
func (c *Client) endpoint(node *v1.Node) (kubeletEndpoint, error) {
	host, err := preferredNodeAddress(node, c.cfg.PreferredAddressTypes)
	if err != nil {
		return kubeletEndpoint{}, err
	}
	port := c.cfg.Port
	if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p > 0 {
		port = int(p)
	}
	return kubeletEndpoint{host: host, port: strconv.Itoa(port)}, nil
}

// preferredNodeAddress returns the node's first address of the first
// preferred type that it has. A node without a Hostname address still
// has its kubernetes.io/hostname label, which upstream falls back to.
func preferredNodeAddress(node *v1.Node, preferred []v1.NodeAddressType) (string, error) {
	for _, t := range preferred {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address, nil
			}
		}
		if t == v1.NodeHostName && node.Labels[v1.LabelHostname] != "" {
			return node.Labels[v1.LabelHostname], nil
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// resourceMetricsPath is the kubelet's resource metrics endpoint.
const resourceMetricsPath = "/metrics/resource"

// ResourceMetrics GETs the node's /metrics/resource with the API
// server's kubelet client certificate (the agent authorizes it for
// nodes/metrics), in the Prometheus text format.
func (c *Client) ResourceMetrics(ctx context.Context, node *v1.Node) (io.ReadCloser, error) {
	ep, err := c.endpoint(node)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.url(resourceMetricsPath, nil).String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, msg)
	}
	return resp.Body, nil
}
