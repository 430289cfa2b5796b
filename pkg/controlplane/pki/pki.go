package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
)

// File names inside the PKI directory.
const (
	CACertFile        = "ca.crt"
	CAKeyFile         = "ca.key"
	ServingCertFile   = "apiserver.crt"
	ServingKeyFile    = "apiserver.key"
	AdminCertFile     = "admin.crt"
	AdminKeyFile      = "admin.key"
	AdminUser         = "kubernetes-admin"
	AdminGroup        = "system:masters"
	CAValidity        = 10 * 365 * 24 * time.Hour
	LeafValidity      = 365 * 24 * time.Hour
	RenewBefore       = 30 * 24 * time.Hour
	notBeforeSkew     = 5 * time.Minute
	servingCommonName = "kube-apiserver"
)

// The CA of the kubelets' serving certificates (PKI.KubeletServingCA).
const (
	KubeletServingCACertFile = "kubelet-serving-ca.crt"
	KubeletServingCAKeyFile  = "kubelet-serving-ca.key"
)

// The API server's client certificate towards kubelets, named as kubeadm
// names it. The agents authorize it with a SubjectAccessReview. kubeadm
// puts it in kubeadm:cluster-admins, which RBAC binds to cluster-admin;
// this API server has no RBAC yet, and system:masters is the group its
// authorizer allows everything, so that is the group it gets.
const (
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
	KubeletClientUser     = "kube-apiserver-kubelet-client"
	KubeletClientGroup    = "system:masters"
)

// Options tune Ensure. The zero value uses the host's name and addresses.
type Options struct {
	// ExtraSANs are added to the serving certificate (DNS names or IPs).
	ExtraSANs []string
	// Hostname defaults to os.Hostname().
	Hostname string
	// IPs are the node's addresses; by default those of its interfaces.
	IPs []net.IP
	// Now is the clock (tests); default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// PKI is the loaded certificate directory.
type PKI struct {
	Dir string
	// CA is the cluster CA (ca.crt): it signs the API server's serving
	// certificate and every client certificate, and everyone trusts it
	// for the API server (kubeconfigs, kube-root-ca.crt). p.CACert,
	// p.CAPEM, p.CertPool and p.SignRequest are its.
	CA
	// KubeletServingCA (kubelet-serving-ca.crt) signs only the kubelets'
	// serving certificates (kubernetes.io/kubelet-serving requests, whose
	// names come from what nodes report about themselves), and only the
	// API server trusts it, to verify kubelets. Kept apart so that such a
	// certificate can never pass for the API server.
	KubeletServingCA CA
	// ServingCertPath and ServingKeyPath hold the API server's serving pair.
	ServingCertPath, ServingKeyPath string
	// AdminCertPEM and AdminKeyPEM are the cluster-admin client credentials.
	AdminCertPEM, AdminKeyPEM []byte
	// KubeletClientCertPEM and KubeletClientKeyPEM are what the API
	// server presents to kubelets (kube-apiserver's --kubelet-client-*).
	KubeletClientCertPEM, KubeletClientKeyPEM []byte
}

// Ensure loads the PKI in dir, creating or renewing what is missing or
// no longer valid.
func Ensure(dir string, opts Options) (*PKI, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki dir: %w", err)
	}
	p := &PKI{
		Dir:             dir,
		ServingCertPath: filepath.Join(dir, ServingCertFile),
		ServingKeyPath:  filepath.Join(dir, ServingKeyFile),
	}
	var err error
	if p.CA, err = ensureCA(dir, clusterCA, opts.Now, opts.Logger); err != nil {
		return nil, err
	}
	if p.KubeletServingCA, err = ensureCA(dir, kubeletServingCA, opts.Now, opts.Logger); err != nil {
		return nil, err
	}
	dnsNames, ips, err := servingSANs(opts)
	if err != nil {
		return nil, err
	}
	serving := leafSpec{
		name:     "apiserver",
		cn:       servingCommonName,
		dnsNames: dnsNames,
		ips:      ips,
		usages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, _, err := p.ensureLeaf(dir, serving, opts.Logger); err != nil {
		return nil, err
	}
	admin := clientLeaf("admin", AdminUser, AdminGroup)
	if p.AdminCertPEM, p.AdminKeyPEM, err = p.ensureLeaf(dir, admin, opts.Logger); err != nil {
		return nil, err
	}
	kubelet := clientLeaf("apiserver-kubelet-client", KubeletClientUser, KubeletClientGroup)
	if p.KubeletClientCertPEM, p.KubeletClientKeyPEM, err = p.ensureLeaf(dir, kubelet, opts.Logger); err != nil {
		return nil, err
	}
	return p, nil
}

// ServingCertificate loads the serving pair for a tls.Config.
func (p *PKI) ServingCertificate() (tls.Certificate, error) {
	return tls.LoadX509KeyPair(p.ServingCertPath, p.ServingKeyPath)
}

// IssueClientCert signs a client certificate (ExtKeyUsageClientAuth) for
// cn and orgs, valid for validity (LeafValidity when zero). Kubernetes maps
// CN to the user name and O to its groups.
func (p *PKI) IssueClientCert(cn string, orgs []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if cn == "" {
		return nil, nil, errors.New("pki: client certificate needs a common name")
	}
	if validity <= 0 {
		validity = LeafValidity
	}
	return p.issue(leafSpec{cn: cn, orgs: orgs, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, validity)
}

// servingSANs lists the serving certificate's names: loopback, the host's
// name and addresses, the in-cluster service names, and opts.ExtraSANs.
func servingSANs(opts Options) ([]string, []net.IP, error) {
	hostname, err := opts.hostname()
	if err != nil {
		return nil, nil, err
	}
	nodeIPs := opts.IPs
	if nodeIPs == nil {
		var err error
		if nodeIPs, err = hostIPs(); err != nil {
			return nil, nil, err
		}
	}
	dns := []string{
		"localhost", hostname,
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	ips = append(ips, nodeIPs...)
	for _, san := range opts.ExtraSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			dns = append(dns, san)
		}
	}
	return uniqueStrings(dns), uniqueIPs(ips), nil
}

func (opts Options) withDefaults() Options {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts
}

// hostname is opts.Hostname, else the host's name.
func (opts Options) hostname() (string, error) {
	if opts.Hostname != "" {
		return opts.Hostname, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("hostname: %w", err)
	}
	return h, nil
}

// hostIPs returns the addresses of the host's interfaces, link-local excluded.
func hostIPs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	var ips []net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsLinkLocalMulticast() {
			continue
		}
		ips = append(ips, ipn.IP)
	}
	return ips, nil
}

func uniqueStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func uniqueIPs(in []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range in {
		if !slices.ContainsFunc(out, ip.Equal) {
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			out = append(out, ip)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// newSerial returns 127 random bits plus one: positive and unique
// (RFC 5280 allows up to 20 octets).
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// writeFile replaces path atomically and durably with data and mode.
func writeFile(path string, data []byte, mode os.FileMode) error {
	return atomicfile.Write(path, data, mode)
}
