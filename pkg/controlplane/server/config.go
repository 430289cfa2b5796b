package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/inflight"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/nodeipam"
	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
)

// Defaults, as kube-apiserver's.
const (
	DefaultSecurePort  = 6443
	DefaultBindAddress = "0.0.0.0"
	DefaultDataDir     = "/var/lib/nodeagent"

	// KubeconfigFile and TokenFile are relative to the data directory.
	KubeconfigFile = "admin.kubeconfig"
	TokenFile      = "tokens.csv"

	defaultShutdownTimeout = 10 * time.Second
	// DefaultEventTTL is kube-apiserver's --event-ttl default.
	DefaultEventTTL = time.Hour
)

// Config configures Run. Zero values take the defaults above.
type Config struct {
	DataDir     string
	SecurePort  int
	BindAddress string

	// EtcdServers selects an external etcd cluster (kube-apiserver's
	// --etcd-servers); empty runs an embedded member in DataDir/etcd.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdClientPort and EtcdPeerPort are the embedded member's loopback
	// ports (defaults 2379 and 2380).
	EtcdClientPort, EtcdPeerPort int
	// EtcdTuning is the embedded member's quota, compaction retention and
	// raft timings (--etcd-quota-backend-bytes, ...); zero values take
	// etcd's defaults (a 5m compaction retention).
	EtcdTuning etcd.Tuning

	// EventTTL is how long etcd keeps an event after its last write
	// (kube-apiserver's --event-ttl; default 1h); negative keeps events
	// forever (the flag's 0).
	EventTTL time.Duration

	// ExtraSANs are added to the serving certificate.
	ExtraSANs []string
	// DisableAgent keeps this host's node agent from starting.
	DisableAgent bool
	// ShutdownTimeout bounds the graceful HTTP shutdown (default 10s).
	ShutdownTimeout time.Duration

	// ClusterCIDR and NodeCIDRMaskSize are the range the node IPAM
	// controller gives nodes their pod CIDRs from (kube-controller-
	// manager's --cluster-cidr and --node-cidr-mask-size; defaults
	// 10.244.0.0/16 and 24).
	ClusterCIDR      string
	NodeCIDRMaskSize int

	// MetricResolution is how often the nodes' resource metrics are
	// scraped for metrics.k8s.io (metrics-server's --metric-resolution;
	// default 15s).
	MetricResolution time.Duration

	// DNSAddress is where the cluster DNS server listens, over UDP and
	// TCP (the command's default is DefaultDNSAddress); empty runs none.
	DNSAddress string
	// ClusterDomain is the DNS zone of services and pods (default
	// cluster.local).
	ClusterDomain string
	// DNSUpstreams (IP or IP:port) get the names outside the cluster
	// domain; empty: the nameservers of /etc/resolv.conf.
	DNSUpstreams []string
	// DNSRateLimit is the UDP answers a second each client of the cluster
	// DNS gets before it is sent truncated ones (and retries over TCP);
	// 0: DefaultDNSRateLimit; negative: no limit.
	DNSRateLimit int

	// KubeletCertificateAuthority is the PEM file that verifies the
	// kubelets' serving certificates (kube-apiserver's
	// --kubelet-certificate-authority); empty: the kubelet-serving CA
	// (pki/kubelet-serving-ca.crt), which signs the serving certificates
	// agents request (serverTLSBootstrap) and nothing else.
	// KubeletInsecureTLS skips the verification, as kube-apiserver does
	// without the flag, for kubelets that serve self-signed certificates.
	KubeletCertificateAuthority string
	KubeletInsecureTLS          bool

	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// read-only and the mutating requests served at once, as
	// kube-apiserver's flags of those names (defaults 400 and 200); a
	// negative value is no limit (the flags' 0).
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int

	// EncryptionProviderConfig is the EncryptionConfiguration file that
	// encrypts resources at rest (kube-apiserver's flag of that name);
	// empty: EncryptionConfigFile in DataDir, written on first start with
	// a fresh aescbc key for Secrets.
	EncryptionProviderConfig string

	Logger *slog.Logger
	// APIServeHook, for tests only, runs before the API server serves
	// each authorized resource request (apiserver.Config.ServeHook).
	APIServeHook func(*http.Request)
	// Ready, when set, is closed once the server accepts requests and is
	// ready (use a new channel for every Run).
	Ready chan<- struct{}
}

// AddFlags registers the `nodeagent server` flags that set c, with the
// defaults above (scripts use these names: keep them).
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", DefaultDataDir, "Directory for the PKI, the embedded etcd, admin.kubeconfig and tokens.csv.")
	fs.IntVar(&c.SecurePort, "secure-port", DefaultSecurePort, "The port on which to serve HTTPS with authentication.")
	fs.StringVar(&c.BindAddress, "bind-address", DefaultBindAddress, "The IP address on which to listen for the --secure-port port.")
	fs.StringSliceVar(&c.EtcdServers, "etcd-servers", nil, "List of etcd servers to connect with (scheme://ip:port), comma separated. Empty runs an embedded etcd.")
	fs.StringVar(&c.EtcdCAFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&c.EtcdCertFile, "etcd-certfile", "", "SSL certification file used to secure etcd communication.")
	fs.StringVar(&c.EtcdKeyFile, "etcd-keyfile", "", "SSL key file used to secure etcd communication.")
	fs.IntVar(&c.EtcdClientPort, "etcd-client-port", 0, "Loopback client port of the embedded etcd (default 2379).")
	fs.IntVar(&c.EtcdPeerPort, "etcd-peer-port", 0, "Loopback peer port of the embedded etcd (default 2380).")
	c.addEtcdTuningFlags(fs)
	c.EventTTL = DefaultEventTTL
	fs.Var(&eventTTLFlag{ttl: &c.EventTTL}, "event-ttl", "Amount of time to retain events. Zero retains them until deleted.")
	fs.StringSliceVar(&c.ExtraSANs, "tls-san", nil, "Additional host names or IPs for the serving certificate.")
	fs.BoolVar(&c.DisableAgent, "disable-agent", false, "Do not run a node agent for this host.")
	fs.StringVar(&c.ClusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "CIDR range (IPv4) of the pods; each node gets a block of it as its spec.podCIDR.")
	fs.IntVar(&c.NodeCIDRMaskSize, "node-cidr-mask-size", nodeipam.DefaultNodeCIDRMaskSize, "Mask size of the pod CIDR each node gets out of --cluster-cidr.")
	fs.StringVar(&c.DNSAddress, "dns-address", DefaultDNSAddress, "UDP and TCP address of the cluster DNS server; empty disables it. An unspecified IP (the default) binds this host's IP only, where pods reach it.")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", DefaultClusterDomain, "DNS domain of the cluster: services are <svc>.<ns>.svc.<domain>.")
	fs.StringSliceVar(&c.DNSUpstreams, "dns-upstream", nil, "Resolvers (IP or IP:port) for names outside the cluster domain, comma separated (default: the nameservers of /etc/resolv.conf). Only clients in --cluster-cidr, the service range, node addresses and loopback have those resolved; others get REFUSED.")
	fs.IntVar(&c.DNSRateLimit, "dns-rate-limit", DefaultDNSRateLimit, "UDP answers per second each cluster DNS client gets before the rest come back truncated (so that it retries over TCP); negative disables the limit.")
	fs.StringVar(&c.KubeletCertificateAuthority, "kubelet-certificate-authority", "", "Path to a cert file for the certificate authority that verifies kubelets' serving certificates (default: the kubelet-serving CA, <data-dir>/pki/kubelet-serving-ca.crt, which signs the serving certificates agents request and nothing else).")
	fs.BoolVar(&c.KubeletInsecureTLS, "kubelet-insecure-tls", false, "Do not verify kubelets' serving certificates (for kubelets that serve self-signed ones).")
	fs.StringVar(&c.EncryptionProviderConfig, "encryption-provider-config", "", "The file containing configuration for encryption providers to be used for storing secrets in etcd (default: <data-dir>/"+EncryptionConfigFile+", generated on first start: Secrets with a fresh aescbc key, identity for older plaintext).")
	c.MaxRequestsInFlight = inflight.DefaultMaxRequestsInFlight
	c.MaxMutatingRequestsInFlight = inflight.DefaultMaxMutatingRequestsInFlight
	fs.Var(&inflightFlag{name: "max-requests-inflight", limit: &c.MaxRequestsInFlight}, "max-requests-inflight",
		"The maximum number of non-mutating requests in flight at a given time. When the server exceeds this, it rejects requests. Zero for no limit.")
	fs.Var(&inflightFlag{name: "max-mutating-requests-inflight", limit: &c.MaxMutatingRequestsInFlight}, "max-mutating-requests-inflight",
		"The maximum number of mutating requests in flight at a given time. When the server exceeds this, it rejects requests. Zero for no limit.")
}

// inflightFlag is an in-flight limit flag: upstream's 0 (no limit) is
// the Config's negative value, so that a zero Config takes the default.
type inflightFlag struct {
	name  string
	limit *int
}

func (f *inflightFlag) String() string {
	if f.limit == nil || *f.limit < 0 {
		return "0"
	}
	return strconv.Itoa(*f.limit)
}

func (f *inflightFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return err
	case n < 0:
		return fmt.Errorf("--%s can not be negative value", f.name)
	case n == 0:
		n = -1
	}
	*f.limit = n
	return nil
}

func (f *inflightFlag) Type() string { return "int" }

// inflight is the in-flight filter's configuration (zero: no limit).
func (c *Config) inflight() inflight.Config {
	unlimitedIsZero := func(n int) int { return max(n, 0) }
	return inflight.Config{MaxRequestsInFlight: unlimitedIsZero(c.MaxRequestsInFlight),
		MaxMutatingRequestsInFlight: unlimitedIsZero(c.MaxMutatingRequestsInFlight)}
}

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.SecurePort == 0 {
		c.SecurePort = DefaultSecurePort
	}
	if c.BindAddress == "" {
		c.BindAddress = DefaultBindAddress
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = defaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.EventTTL == 0 {
		c.EventTTL = DefaultEventTTL
	}
	if c.MaxRequestsInFlight == 0 {
		c.MaxRequestsInFlight = inflight.DefaultMaxRequestsInFlight
	}
	if c.MaxMutatingRequestsInFlight == 0 {
		c.MaxMutatingRequestsInFlight = inflight.DefaultMaxMutatingRequestsInFlight
	}
}

func (c *Config) validate() error {
	if c.SecurePort < 1 || c.SecurePort > 65535 {
		return fmt.Errorf("--secure-port %d out of range", c.SecurePort)
	}
	if net.ParseIP(c.BindAddress) == nil {
		return fmt.Errorf("--bind-address %q is not an IP address", c.BindAddress)
	}
	if len(c.EtcdServers) == 0 && (c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != "") {
		return errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		return errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	if err := c.validateEtcdTuning(); err != nil {
		return err
	}
	if err := c.validateDNS(); err != nil {
		return err
	}
	return c.nodeIPAM().Validate()
}

// nodeIPAM is the node IPAM controller's part of the configuration.
func (c *Config) nodeIPAM() nodeipam.Config {
	return nodeipam.Config{ClusterCIDR: c.ClusterCIDR, NodeCIDRMaskSize: c.NodeCIDRMaskSize}
}

func (c *Config) kubeconfigPath() string { return filepath.Join(c.DataDir, KubeconfigFile) }

// listenAddr is where the secure port binds.
func (c *Config) listenAddr() string {
	return net.JoinHostPort(c.BindAddress, strconv.Itoa(c.SecurePort))
}

// localURL is how clients on this host reach the API server: loopback
// unless the server binds one specific address.
func (c *Config) LocalURL() string {
	host := "127.0.0.1"
	if ip := net.ParseIP(c.BindAddress); ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		host = ip.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(c.SecurePort))
}

// servingSANs adds a specific bind address to the requested SANs.
func (c *Config) servingSANs() []string {
	sans := append([]string(nil), c.ExtraSANs...)
	if ip := net.ParseIP(c.BindAddress); ip != nil && !ip.IsUnspecified() {
		sans = append(sans, ip.String())
	}
	return sans
}
