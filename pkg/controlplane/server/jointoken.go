package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// bootstrapTokenChars are the characters of a token's id and secret.
const bootstrapTokenChars = "abcdefghijklmnopqrstuvwxyz0123456789"

// GenerateBootstrapToken returns a random <id>.<secret> token, as
// kubeadm's (6 and 16 characters of [a-z0-9]).
func GenerateBootstrapToken() (string, error) {
	b := make([]byte, 22)
	out := make([]byte, 0, 23)
	for len(out) < 22 {
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("random token: %w", err)
		}
		for _, c := range b {
			// 252 = 7*36: no modulo bias.
			if c < 252 && len(out) < 22 {
				out = append(out, bootstrapTokenChars[int(c)%len(bootstrapTokenChars)])
			}
		}
	}
	return string(out[:6]) + "." + string(out[6:]), nil
}

// JoinToken is what `nodeagent server token create` makes.
type JoinToken struct {
	Token       string
	TTL         time.Duration // 0: never expires, as kubeadm's --ttl 0
	Description string
}

// CreateJoinToken stores the token as kubeadm's bootstrap token secret
// (kube-system/bootstrap-token-<id>): valid for authentication and
// signing, in NodeBootstrapGroup (which joinBindings lets request a node
// client certificate), expiring TTL after now.
func CreateJoinToken(ctx context.Context, client kubernetes.Interface, t JoinToken, now time.Time) (*v1.Secret, error) {
	m := bootstrapTokenRE.FindStringSubmatch(t.Token)
	if m == nil {
		return nil, fmt.Errorf("token %q does not match %s", t.Token, bootstrapTokenRE)
	}
	data := map[string]string{
		bootstrapTokenIDKey:          m[1],
		bootstrapTokenSecretKey:      m[2],
		bootstrapTokenUsageAuthKey:   "true",
		bootstrapTokenUsageSignKey:   "true",
		bootstrapTokenExtraGroupsKey: NodeBootstrapGroup,
	}
	if t.TTL > 0 {
		data[bootstrapTokenExpirationKey] = now.Add(t.TTL).UTC().Format(time.RFC3339)
	}
	if t.Description != "" {
		data[bootstrapTokenDescriptionKey] = t.Description
	}
	s := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapTokenSecretPrefix + m[1], Namespace: "kube-system"},
		Type:       bootstrapTokenSecretType,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	created, err := client.CoreV1().Secrets("kube-system").Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create bootstrap token secret %s: %w", s.Name, err)
	}
	return created, nil
}

// BootstrapKubeconfig is a kubeconfig that authenticates with a bootstrap
// token (the kubelet's --bootstrap-kubeconfig), trusting caPEM.
func BootstrapKubeconfig(serverURL string, caPEM []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["tls-bootstrap-token-user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["tls-bootstrap-token-user@default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "tls-bootstrap-token-user"}
	cfg.CurrentContext = "tls-bootstrap-token-user@default"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode bootstrap kubeconfig: %w", err)
	}
	return data, nil
}

// JoinCommand is the shell a new host runs to join: it writes the
// bootstrap kubeconfig (the CA embedded, as a kubeadm join with
// --discovery-file) under rootDir, then starts the agent with it. The last
// line is the agent's command.
func JoinCommand(serverURL string, caPEM []byte, token, rootDir string) (string, error) {
	kc, err := BootstrapKubeconfig(serverURL, caPEM, token)
	if err != nil {
		return "", err
	}
	boot := filepath.Join(rootDir, "bootstrap-kubeconfig")
	var b strings.Builder
	fmt.Fprintf(&b, "mkdir -p %s && umask 077 && cat > %s <<'EOF'\n%sEOF\n", rootDir, boot, kc)
	fmt.Fprintf(&b, "nodeagent agent --root-dir %s --bootstrap-kubeconfig %s --kubeconfig %s\n",
		rootDir, boot, filepath.Join(rootDir, "kubeconfig"))
	return b.String(), nil
}
