package server

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestGenerateBootstrapToken(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		tok, err := GenerateBootstrapToken()
		if err != nil {
			t.Fatal(err)
		}
		if !bootstrapTokenRE.MatchString(tok) || seen[tok] {
			t.Fatalf("token %q: malformed or repeated", tok)
		}
		seen[tok] = true
	}
}

func TestJoinCommand(t *testing.T) {
	join, err := JoinCommand("https://cp.example:6443", []byte("CA PEM"), "abcdef.0123456789abcdef", "/var/lib/x")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(join, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "nodeagent agent --root-dir /var/lib/x --bootstrap-kubeconfig /var/lib/x/bootstrap-kubeconfig --kubeconfig /var/lib/x/kubeconfig" {
		t.Errorf("agent command %q", last)
	}
	body := join[strings.Index(join, "\n")+1 : strings.LastIndex(join, "EOF\n")]
	cfg, err := clientcmd.Load([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if cfg.Clusters[ctx.Cluster].Server != "https://cp.example:6443" || string(cfg.Clusters[ctx.Cluster].CertificateAuthorityData) != "CA PEM" ||
		cfg.AuthInfos[ctx.AuthInfo].Token != "abcdef.0123456789abcdef" {
		t.Errorf("bootstrap kubeconfig %s", body)
	}
}
