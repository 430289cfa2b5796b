package agent

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
)

func TestNodeAPIEnabled(t *testing.T) {
	off := false
	tests := []struct {
		name   string
		mutate func(*agentconfig.Config)
		joined bool
		want   bool
	}{
		{"joined, defaults", func(*agentconfig.Config) {}, true, true},
		{"standalone, defaults (Webhook needs an API server)", func(*agentconfig.Config) {}, false, false},
		{"standalone, AlwaysAllow", func(c *agentconfig.Config) { c.Authorization.Mode = agentconfig.AuthorizationModeAlwaysAllow }, false, true},
		{"enableServer false", func(c *agentconfig.Config) { c.EnableServer = &off }, true, false},
	}
	for _, tt := range tests {
		cfg := agentconfig.Default()
		tt.mutate(cfg)
		if got := nodeAPIEnabled(cfg, tt.joined); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAPIServerCA(t *testing.T) {
	if ca, err := apiServerCA(nil); ca != nil || err != nil {
		t.Errorf("standalone: %q %v", ca, err)
	}
	if ca, _ := apiServerCA(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("pem")}}); string(ca) != "pem" {
		t.Errorf("CAData: %q", ca)
	}
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte("from file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ca, _ := apiServerCA(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: file}}); string(ca) != "from file" {
		t.Errorf("CAFile: %q", ca)
	}
}

func TestNodeAuthenticatorNeedsAValidCA(t *testing.T) {
	cfg := agentconfig.Default()
	rc := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a certificate")}}
	if _, _, err := nodeAuthenticator(cfg, rc, fake.NewClientset()); err == nil {
		t.Error("a kubeconfig CA that does not parse is not an error")
	}
	if _, pool, err := nodeAuthenticator(cfg, nil, nil); err != nil || pool != nil {
		t.Errorf("standalone without clientCAFile: pool %v, err %v", pool, err)
	}
}
