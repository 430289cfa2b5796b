package framework

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// ControlPlane is `nodeagent server` run in-process on free ports, with
// no agent of its own.
type ControlPlane struct {
	DataDir string
	// URL is where agents reach the API server.
	URL   string
	Admin kubernetes.Interface
	stop  func() error
}

// StartControlPlane runs server.Run in dir on free ports bound to
// 127.0.0.1 (tweak may change the config, e.g. the bind address, before
// it starts; host is then the address agents use in URL, "" for
// 127.0.0.1) and waits until it is ready.
func StartControlPlane(dir, host string, tweak func(*server.Config)) (*ControlPlane, error) {
	var ports [3]int
	for i := range ports {
		p, err := NewFreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ready := make(chan struct{})
	cfg := server.Config{
		DataDir: dir, SecurePort: ports[0], BindAddress: "127.0.0.1",
		EtcdClientPort: ports[1], EtcdPeerPort: ports[2], DisableAgent: true,
		MetricResolution: time.Second, // kubectl top needs two scrapes
		Logger:           slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Ready:            ready,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- server.Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		return nil, fmt.Errorf("control plane: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		return nil, fmt.Errorf("control plane not ready after 90s")
	}
	cp := &ControlPlane{DataDir: dir, URL: "https://" + host + ":" + strconv.Itoa(ports[0])}
	cp.stop = func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(60 * time.Second):
			return fmt.Errorf("control plane did not stop")
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig())
	if err == nil {
		cp.Admin, err = kubernetes.NewForConfig(rc)
	}
	if err != nil {
		_ = cp.stop()
		return nil, err
	}
	return cp, nil
}

// Kubeconfig is the admin kubeconfig.
func (c *ControlPlane) Kubeconfig() string { return filepath.Join(c.DataDir, server.KubeconfigFile) }

// NodeKubeconfig mints a node credential and writes its kubeconfig in dir.
func (c *ControlPlane) NodeKubeconfig(dir, node string) (string, error) {
	path := filepath.Join(dir, node+".kubeconfig")
	return path, server.WriteNodeKubeconfig(c.DataDir, node, c.URL, path)
}

// Stop stops the control plane and waits for it.
func (c *ControlPlane) Stop() error { return c.stop() }

// KubectlVersion is the bundled kubectl's version, stamped into the
// nodeagent builds as release builds of kubectl do (and as make build
// does).
const KubectlVersion = "v1.37.2"

func kubectlLDFlags() string {
	var ldflags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags = append(ldflags, "-X", pkg+".gitVersion="+KubectlVersion,
			"-X", pkg+".gitMajor=1", "-X", pkg+".gitMinor=37")
	}
	return strings.Join(ldflags, " ")
}

// BuildKubectl builds the nodeagent binary into dir (BuildAgent) and
// links dir/kubectl to it: run under that name, it is upstream kubectl
// (`nodeagent kubectl`).
func BuildKubectl(dir string) (string, error) {
	if _, err := BuildAgent(dir); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl")
	if err := os.Remove(bin); err != nil && !os.IsNotExist(err) {
		return "", err
	}
	if err := os.Symlink("nodeagent", bin); err != nil {
		return "", fmt.Errorf("link kubectl: %w", err)
	}
	return bin, nil
}
