package clientcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/clock"
)

// retry bounds the waits between failed rotations (the next attempt
// doubles the wait, from retryMin up to retryMax).
const (
	retryMin = 2 * time.Second
	retryMax = 5 * time.Minute
)

// Rotation configures the client certificate manager (rotateCertificates).
type Rotation struct {
	// Config is the loaded --kubeconfig: its server and CA, and the
	// certificate to start from when the certificate directory has none.
	Config   *rest.Config
	CertDir  string
	NodeName string
	Logger   *slog.Logger
	// Clock and Jitter (a number in [0,1)) are for tests; nil: the real
	// clock and math/rand.
	Clock  clock.Clock
	Jitter func() float64
	// Client renews (tests); nil: a client of Config's rotating transport.
	Client kubernetes.Interface
}

// Rotating is the agent's client certificate under rotation, as the
// kubelet's client certificate manager (client-go's
// util/certificate manager, whose timing it keeps) and UpdateTransport.
type Rotating struct {
	// Config presents the current certificate on every new connection;
	// its copies share one transport.
	Config *rest.Config

	store    certificate.Store
	cur      atomic.Pointer[tls.Certificate]
	tracker  *connrotation.ConnectionTracker
	nodeName string
	client   kubernetes.Interface // nil: one of Config
	clock    clock.Clock
	jitter   func() float64
	log      *slog.Logger
}

// NewRotating loads the current pair (kubelet-client-current.pem in the
// certificate directory, else the kubeconfig's certificate, which is
// then stored there) and builds the transport that presents it. Start
// the rotation with Run.
func NewRotating(r Rotation) (*Rotating, error) {
	tc := r.Config.TLSClientConfig
	store, err := certificate.NewFileStore(PairName, r.CertDir, r.CertDir, tc.CertFile, tc.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate store: %w", err)
	}
	rot := &Rotating{store: store, tracker: connrotation.NewConnectionTracker(), nodeName: r.NodeName,
		client: r.Client, clock: r.Clock, jitter: r.Jitter, log: r.Logger}
	if rot.clock == nil {
		rot.clock = clock.RealClock{}
	}
	if rot.jitter == nil {
		rot.jitter = rand.Float64
	}
	cur, err := store.Current()
	switch {
	case err == nil:
	case len(tc.CertData) > 0 && len(tc.KeyData) > 0:
		// An embedded pair: stored, so that renewals have a place.
		if err := os.MkdirAll(r.CertDir, 0o755); err != nil {
			return nil, fmt.Errorf("certificate directory: %w", err)
		}
		if cur, err = store.Update(tc.CertData, tc.KeyData); err != nil {
			return nil, fmt.Errorf("store the kubeconfig's client certificate: %w", err)
		}
	default:
		return nil, fmt.Errorf("no client certificate to rotate: %w", err)
	}
	rot.cur.Store(cur)

	ca := tc.CAData
	if len(ca) == 0 && tc.CAFile != "" {
		if ca, err = os.ReadFile(tc.CAFile); err != nil {
			return nil, fmt.Errorf("API server CA: %w", err)
		}
	}
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{Host: r.Config.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: ca, ServerName: tc.ServerName, Insecure: tc.Insecure, NextProtos: tc.NextProtos,
	}})
	if err != nil {
		return nil, fmt.Errorf("client TLS configuration: %w", err)
	}
	if tlsCfg == nil {
		return nil, fmt.Errorf("rotateCertificates needs an https server in the kubeconfig, not %q", r.Config.Host)
	}
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return rot.Current(), nil }
	dialer := connrotation.NewDialerWithTracker((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext, rot.tracker)
	rc := rest.CopyConfig(r.Config)
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.Transport = &transport{ca: ca, rt: utilnet.SetTransportDefaults(&http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsCfg,
		MaxIdleConnsPerHost: 25, DialContext: dialer.DialContext,
	})}
	rot.Config = rc
	return rot, nil
}

// Current is the certificate the clients present.
func (r *Rotating) Current() *tls.Certificate { return r.cur.Load() }

// RotationDeadline is when client-go's certificate manager renews a
// certificate: at a jittered 70-90% of its life (jitter in [0,1)).
func RotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	total := float64(notAfter.Sub(notBefore))
	return notBefore.Add(time.Duration(total * (0.7 + 0.2*jitter)))
}

// Run renews the certificate at each rotation deadline until ctx ends,
// retrying a failed renewal with a growing wait. A renewal requests the
// certificate with the current one (as system:node:<name>, which the
// control plane's approver lets renew its own: selfnodeclient), stores
// the new pair and closes the connections made with the old one.
func (r *Rotating) Run(ctx context.Context) error {
	retry := time.Duration(0)
	for {
		wait := retry
		if retry == 0 {
			leaf := r.Current().Leaf
			deadline := RotationDeadline(leaf.NotBefore, leaf.NotAfter, r.jitter())
			wait = deadline.Sub(r.clock.Now())
			r.log.Info("client certificate rotation scheduled", "notAfter", leaf.NotAfter, "deadline", deadline)
		}
		if wait > 0 {
			t := r.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
		}
		if err := r.rotate(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			retry = min(max(2*retry, retryMin), retryMax)
			r.log.Warn("client certificate rotation failed; retrying", "err", err, "in", retry)
			continue
		}
		retry = 0
	}
}

// rotate requests a new certificate for a new key and switches to it.
func (r *Rotating) rotate(ctx context.Context) error {
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return fmt.Errorf("new key: %w", err)
	}
	client := r.client
	if client == nil {
		if client, err = kubernetes.NewForConfig(r.Config); err != nil {
			return err
		}
	}
	certPEM, err := requestNodeCertificate(ctx, client, keyPEM, r.nodeName, r.log)
	if err != nil {
		return err
	}
	cert, err := r.store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("store the client certificate: %w", err)
	}
	r.cur.Store(cert)
	r.log.Info("client certificate rotated: closing the connections made with the previous one", "notAfter", cert.Leaf.NotAfter)
	r.tracker.CloseAll()
	return nil
}

// transport is the rotating round tripper; it keeps the CA, which the
// configuration no longer carries (client-go refuses a custom transport
// with TLS options).
type transport struct {
	ca []byte
	rt http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) { return t.rt.RoundTrip(req) }

// CAData is the API server's CA.
func (t *transport) CAData() []byte { return t.ca }

// CloseIdleConnections lets client-go's and net/http's idle cleanup reach
// the wrapped transport.
func (t *transport) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(t.rt) }
