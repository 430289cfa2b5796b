package pki

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClusterName is the cluster and context name in written kubeconfigs.
const ClusterName = "nodeagent"

// WriteKubeconfig writes a standard kubeconfig (one cluster, user and
// current context, credentials embedded) to path with mode 0600.
func WriteKubeconfig(path, serverURL string, caPEM, certPEM, keyPEM []byte, user string) error {
	ctxName := user + "@" + ClusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ClusterName] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: ClusterName, AuthInfo: user}
	cfg.CurrentContext = ctxName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFile(path, data, 0o600)
}
