package clientcert

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
)

// PairName is the file-name stem of the client pair in the certificate
// directory: kubelet-client-current.pem, as the kubelet's.
const PairName = "kubelet-client"

// tmpKeyFile keeps the bootstrap request's key across restarts until the
// certificate is issued (the kubelet's kubelet-client.key.tmp), so that a
// request approved while the agent was down still matches its key.
const tmpKeyFile = PairName + ".key.tmp"

// waitTimeout bounds the wait for the bootstrap request's certificate, as
// the kubelet's (an hour).
const waitTimeout = time.Hour

// Bootstrap says where LoadClientCert reads and writes.
type Bootstrap struct {
	Kubeconfig          string // --kubeconfig: written when missing or invalid
	BootstrapKubeconfig string // --bootstrap-kubeconfig
	CertDir             string // --cert-dir
	NodeName            string
	Logger              *slog.Logger
	Now                 func() time.Time // nil: time.Now
}

// LoadClientCert is the kubelet's bootstrap.LoadClientCert: when
// b.Kubeconfig is missing or its client certificate does not load or has
// expired, it requests a node client certificate with the bootstrap
// kubeconfig's credential (unless the certificate directory has a valid
// one), stores it in CertDir and writes b.Kubeconfig pointing at
// kubelet-client-current.pem with the bootstrap kubeconfig's cluster.
func LoadClientCert(ctx context.Context, b Bootstrap) error { return loadClientCert(ctx, b, nil) }

// loadClientCert is LoadClientCert with the bootstrap client (nil: one of
// the bootstrap kubeconfig).
func loadClientCert(ctx context.Context, b Bootstrap, client kubernetes.Interface) error {
	now := b.Now
	if now == nil {
		now = time.Now
	}
	log := b.Logger
	if ok, why := kubeconfigValid(b.Kubeconfig, now()); ok {
		log.Info("kubeconfig is valid: skipping the client TLS bootstrap", "kubeconfig", b.Kubeconfig)
		return nil
	} else {
		log.Info("client TLS bootstrap", "kubeconfig", b.Kubeconfig, "reason", why)
	}
	bootCfg, bootRaw, err := loadKubeconfig(b.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	if err := os.MkdirAll(b.CertDir, 0o755); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	store, err := certificate.NewFileStore(PairName, b.CertDir, b.CertDir, "", "")
	if err != nil {
		return fmt.Errorf("client certificate store: %w", err)
	}
	if cert, err := store.Current(); err == nil && cert.Leaf != nil && now().Before(cert.Leaf.NotAfter) {
		log.Info("using the client certificate of the certificate directory", "path", store.CurrentPath())
		return writeKubeconfig(b.Kubeconfig, bootRaw, store.CurrentPath())
	}
	keyPath := filepath.Join(b.CertDir, tmpKeyFile)
	keyPEM, _, err := keyutil.LoadOrGenerateKeyFile(keyPath)
	if err != nil {
		return fmt.Errorf("bootstrap key %s: %w", keyPath, err)
	}
	if client == nil {
		if client, err = kubernetes.NewForConfig(bootCfg); err != nil {
			return fmt.Errorf("bootstrap client: %w", err)
		}
	}
	certPEM, err := requestNodeCertificate(ctx, client, keyPEM, b.NodeName, log)
	if err != nil {
		return err
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("store the client certificate: %w", err)
	}
	if err := os.Remove(keyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("removing the bootstrap key", "path", keyPath, "err", err)
	}
	log.Info("client certificate issued", "path", store.CurrentPath())
	return writeKubeconfig(b.Kubeconfig, bootRaw, store.CurrentPath())
}

// kubeconfigValid is the kubelet's isClientConfigStillValid: the file
// loads and its client certificate, if it has one, has not expired.
func kubeconfigValid(path string, now time.Time) (bool, string) {
	if _, err := os.Stat(path); err != nil {
		return false, err.Error()
	}
	rc, _, err := loadKubeconfig(path)
	if err != nil {
		return false, err.Error()
	}
	var certs []*x509.Certificate
	switch {
	case len(rc.TLSClientConfig.CertData) > 0:
		certs, err = parseCerts(rc.TLSClientConfig.CertData)
	case rc.TLSClientConfig.CertFile != "":
		var data []byte
		if data, err = os.ReadFile(rc.TLSClientConfig.CertFile); err == nil {
			certs, err = parseCerts(data)
		}
	default:
		return true, "" // no client certificate (a token): nothing to renew
	}
	if err != nil {
		return false, fmt.Sprintf("client certificate: %v", err)
	}
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return false, fmt.Sprintf("client certificate expired at %s", c.NotAfter.Format(time.RFC3339))
		}
	}
	return true, ""
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	certs, err := certutilParse(data)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

func loadKubeconfig(path string) (*rest.Config, *clientcmdapi.Config, error) {
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return rc, raw, nil
}

// writeKubeconfig writes the kubelet's kubeconfig from bootstrapping: the
// bootstrap kubeconfig's current cluster, the user default-auth with the
// pair file as certificate and key.
func writeKubeconfig(path string, boot *clientcmdapi.Config, pairFile string) error {
	ctx := boot.Contexts[boot.CurrentContext]
	if ctx == nil || boot.Clusters[ctx.Cluster] == nil {
		return fmt.Errorf("bootstrap kubeconfig has no current context and cluster")
	}
	cluster := boot.Clusters[ctx.Cluster].DeepCopy()
	if cluster.CertificateAuthority != "" && len(cluster.CertificateAuthorityData) == 0 {
		// The file path is the bootstrap kubeconfig's; inline the CA.
		ca, err := os.ReadFile(cluster.CertificateAuthority)
		if err != nil {
			return fmt.Errorf("bootstrap kubeconfig CA: %w", err)
		}
		cluster.CertificateAuthority, cluster.CertificateAuthorityData = "", ca
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default-cluster"] = cluster
	cfg.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: pairFile, ClientKey: pairFile}
	cfg.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}
	cfg.CurrentContext = "default-context"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// Template is the node client certificate's request: CN
// system:node:<name>, O system:nodes, no SANs.
func Template(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}}
}

// Usages are the kubelet's client usages for key: key encipherment only
// for RSA keys.
func Usages(key any) []certificatesv1.KeyUsage {
	if _, ok := key.(*rsa.PrivateKey); ok {
		return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	}
	return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
}

// requestNodeCertificate submits the request and waits for its
// certificate. The request's name is a digest of the key, subject and
// usages (the kubelet's node-csr-<digest>): a restart with the same key
// finds its own request again.
func requestNodeCertificate(ctx context.Context, client kubernetes.Interface, keyPEM []byte, nodeName string, log *slog.Logger) ([]byte, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("bootstrap key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("bootstrap key %T cannot sign", key)
	}
	tmpl := Template(nodeName)
	der, err := x509.CreateCertificateRequest(nil, tmpl, signer)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	reqPEM := pemEncode("CERTIFICATE REQUEST", der)
	usages := Usages(key)
	name, err := digestedName(signer.Public(), tmpl.Subject, usages)
	if err != nil {
		return nil, err
	}
	reqName, reqUID, err := csr.RequestCertificateWithContext(ctx, client, reqPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, fmt.Errorf("certificate signing request: %w", err)
	}
	log.Info("waiting for the client certificate", "csr", reqName)
	wctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	cert, err := csr.WaitForCertificate(wctx, client, reqName, reqUID)
	if err != nil {
		return nil, fmt.Errorf("certificate signing request %s: %w", reqName, err)
	}
	return cert, nil
}

func digestedName(pub crypto.PublicKey, subj pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	switch pub.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey:
	default:
		return "", fmt.Errorf("unsupported key %T", pub)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(der)
	fmt.Fprintf(h, "|%s|%v|%v", subj.CommonName, subj.Organization, usages)
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}
