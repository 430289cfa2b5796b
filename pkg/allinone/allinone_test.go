package allinone

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/util/keyutil"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/pkg/nodeapi"
)

func TestAddFlags(t *testing.T) {
	var c Config
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c.Server.DataDir != server.DefaultDataDir || c.Server.SecurePort != server.DefaultSecurePort ||
		c.Server.DNSAddress != server.DefaultDNSAddress || c.Server.ClusterDomain != server.DefaultClusterDomain {
		t.Errorf("server defaults: %+v", c.Server)
	}
	if c.Network.Plugin != "" || c.Network.ServiceProxy || c.Network.CNIConfDir != agentconfig.DefaultCNIConfDir ||
		!slices.Equal(c.Network.CNIBinDirs, agentconfig.DefaultCNIBinDirs) {
		t.Errorf("network defaults: %+v", c.Network)
	}
	err := fs.Parse([]string{"--data-dir=/d", "--secure-port=16443", "--dns-address=", "--network-plugin=kubenet",
		"--cni-bin-dir=/a,/b", "--service-proxy", "--agent-config=/etc/a.yaml", "--disable-agent"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{AgentConfigFile: "/etc/a.yaml", Network: Network{Plugin: "kubenet", CNIConfDir: agentconfig.DefaultCNIConfDir, CNIBinDirs: []string{"/a", "/b"}, ServiceProxy: true}}
	if c.Server.DataDir != "/d" || c.Server.SecurePort != 16443 || c.Server.DNSAddress != "" || !c.Server.DisableAgent ||
		c.AgentConfigFile != want.AgentConfigFile || c.Network.Plugin != want.Network.Plugin ||
		!slices.Equal(c.Network.CNIBinDirs, want.Network.CNIBinDirs) || !c.Network.ServiceProxy {
		t.Errorf("parsed: %+v", c)
	}
}

func TestUseClusterDNS(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dnsAddress   string
		own          []string
		serviceProxy bool
		want         []string
		wantDomain   string
	}{
		{name: "server's DNS at its address", dnsAddress: "10.1.2.3:53", want: []string{"10.1.2.3"}, wantDomain: "example.test"},
		{name: "service proxy: the kube-dns service IP", dnsAddress: "10.1.2.3:53", serviceProxy: true, want: []string{server.KubeDNSServiceIP}, wantDomain: "example.test"},
		{name: "the agent's own", dnsAddress: "10.1.2.3:53", own: []string{"1.1.1.1"}, serviceProxy: true, want: []string{"1.1.1.1"}},
		{name: "no DNS server", dnsAddress: "", serviceProxy: true},
		{name: "loopback: pods cannot use it", dnsAddress: "127.0.0.1:53"},
		{name: "not port 53", dnsAddress: "10.1.2.3:5353"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentCfg := agentconfig.Default()
			agentCfg.ClusterDNS = tc.own
			useClusterDNS(agentCfg, &server.Config{DNSAddress: tc.dnsAddress, ClusterDomain: "example.test"}, tc.serviceProxy)
			if !slices.Equal(agentCfg.ClusterDNS, tc.want) {
				t.Errorf("clusterDNS %v, want %v", agentCfg.ClusterDNS, tc.want)
			}
			if tc.wantDomain != "" && agentCfg.ClusterDomain != tc.wantDomain {
				t.Errorf("clusterDomain %q, want %q", agentCfg.ClusterDomain, tc.wantDomain)
			}
		})
	}
}

func TestAgentConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	body := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [9.9.9.9]\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Config{AgentConfigFile: path, Server: server.Config{DNSAddress: "10.1.2.3:53"}}
	agentCfg, err := c.agentConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(agentCfg.ClusterDNS, []string{"9.9.9.9"}) {
		t.Errorf("clusterDNS %v: the file's should win", agentCfg.ClusterDNS)
	}
	if agentCfg.ServerTLSBootstrap == nil || !*agentCfg.ServerTLSBootstrap {
		t.Errorf("serverTLSBootstrap %v: the server's agent requests its serving certificate unless the file says otherwise", agentCfg.ServerTLSBootstrap)
	}
	if err := os.WriteFile(path, []byte(body+"serverTLSBootstrap: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if agentCfg, err = c.agentConfig(); err != nil {
		t.Fatal(err)
	}
	if *agentCfg.ServerTLSBootstrap {
		t.Error("serverTLSBootstrap: false in the file was overridden")
	}
	c.AgentConfigFile = filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := c.agentConfig(); err == nil {
		t.Error("a missing agent config: no error")
	}
}

func TestAgentFlags(t *testing.T) {
	c := Config{Server: server.Config{ClusterCIDR: "10.50.0.0/16"},
		Network: Network{Plugin: "kubenet", CNIConfDir: "/c", CNIBinDirs: []string{"/b"}, ServiceProxy: true}}
	f := c.agentFlags("/d/node.kubeconfig")
	if f.Kubeconfig != "/d/node.kubeconfig" || f.NetworkPlugin != "kubenet" || f.CNIConfDir != "/c" ||
		!slices.Equal(f.CNIBinDirs, []string{"/b"}) || !f.ServiceProxy || f.ClusterCIDR != "10.50.0.0/16" ||
		f.RootDir != agentconfig.DefaultRootDir {
		t.Errorf("flags: %+v", f)
	}
	if err := f.Validate(); err != nil {
		t.Error(err)
	}
}

func TestDropUntrustedServingCert(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dataDir := t.TempDir()
	p, err := pki.Ensure(filepath.Join(dataDir, "pki"), pki.Options{Hostname: "n1", IPs: []net.IP{net.ParseIP("10.0.0.1")}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dataDir  string
		signer   *pki.CA
		wantKept bool
	}{
		{name: "signed by the kubelet-serving CA", dataDir: dataDir, signer: &p.KubeletServingCA, wantKept: true},
		{name: "signed by the cluster CA (an older version)", dataDir: dataDir, signer: &p.CA},
		{name: "no kubelet-serving CA", dataDir: t.TempDir(), signer: &p.CA, wantKept: true},
		{name: "no serving certificate", dataDir: dataDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rootDir := t.TempDir()
			path := filepath.Join(rootDir, "pki", nodeapi.ServerCertPairName+"-current.pem")
			if tc.signer != nil {
				writeServingPair(t, path, tc.signer)
			}
			dropUntrustedServingCert(tc.dataDir, rootDir, log)
			_, err := os.Stat(path)
			if kept := err == nil; kept != tc.wantKept {
				t.Errorf("kept %v, want %v", kept, tc.wantKept)
			}
		})
	}
}

// writeServingPair writes a serving certificate ca signed and its key to
// path, in one PEM file as the agent's certificate manager stores them.
func writeServingPair(t *testing.T, path string, ca *pki.CA) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}, DNSNames: []string{"n1"}, PublicKey: &key.PublicKey}
	certPEM, err := ca.SignRequest(req, x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(certPEM, keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
}
