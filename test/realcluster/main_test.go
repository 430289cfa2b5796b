package realcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/proxy"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const nodeName = "realcluster-node"

// What the tests share: the cluster, the one agent joined to it, the
// bundled kubectl as the cluster admin, and the test containerd.
var (
	cl    *cluster
	agent *framework.Agent
	kctl  framework.Kubectl
	cri   *nart.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run prints why the set-up failed last, after the components' logs, so
// that the end of a CI log names the cause.
func run(m *testing.M) int {
	code, err := runSuite(m)
	if err != nil {
		fmt.Println("realcluster: set-up failed:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func runSuite(m *testing.M) (code int, setupErr error) {
	if os.Geteuid() != 0 {
		fmt.Println("realcluster: skipped, needs root (containerd, runc, CNI)")
		return 0, nil
	}
	work, err := os.MkdirTemp("", "nodeagent-realcluster")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(work)
	bin, err := buildControlPlane()
	if err != nil {
		return 1, err
	}
	agentBin, err := framework.BuildAgent(work)
	if err != nil {
		return 1, err
	}
	kubectlBin, err := framework.BuildKubectl(work)
	if err != nil {
		return 1, err
	}
	stopCtrd, err := framework.StartContainerd()
	if err != nil {
		return 1, err
	}
	defer func() {
		if err := stopCtrd(); err != nil {
			fmt.Println(err)
		}
	}()
	if cri, err = framework.DialCRI(); err != nil {
		return 1, err
	}
	defer cri.Close()
	if err := framework.SweepSandboxes(cri); err != nil {
		return 1, err
	}
	if cl, err = startCluster(bin, filepath.Join(work, "cluster")); err != nil {
		return 1, err
	}
	code = 1
	defer func() {
		if code != 0 || os.Getenv("REALCLUSTER_LOGS") != "" {
			fmt.Println(cl.logTails())
		}
		if err := cl.stop(); err != nil {
			fmt.Println(err)
		}
	}()
	kctl = framework.Kubectl{Bin: kubectlBin, Kubeconfig: cl.adminConfig, Home: work}
	// The service proxy's nftables table is the host's: removed after the
	// agent stops, unless it was there before.
	if hadProxyTable() {
		return 1, fmt.Errorf("nftables table ip %s exists: another service proxy runs on this host", proxy.TableName)
	}
	defer func() {
		if err := deleteProxyTable(); err != nil {
			fmt.Println(err)
			code = 1
		}
	}()
	stopAgent, err := startAgent(agentBin, filepath.Join(work, "agent"))
	if err != nil {
		return 1, err
	}
	code = m.Run()
	if err := stopAgent(); err != nil {
		fmt.Println(err)
		code = 1
	}
	return code, nil
}

// buildControlPlane runs hack/realcluster.sh build (a no-op when the
// binaries are cached) and returns their directory.
func buildControlPlane() (string, error) {
	script := filepath.Join(framework.RepoRoot(), "hack", "realcluster.sh")
	cmd := exec.Command("bash", script, "build")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/realcluster.sh build: %w", err)
	}
	out, err := exec.Command("bash", script, "bindir").Output()
	if err != nil {
		return "", fmt.Errorf("hack/realcluster.sh bindir: %w", err)
	}
	return string(trimNL(out)), nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// kubeletConfig is what the agent adds to the framework's
// KubeletConfiguration: the fields kubeadm writes into
// /var/lib/kubelet/config.yaml that matter here (client certificates of
// the cluster CA, no anonymous requests, webhook authentication and
// authorization, the cluster DNS). The framework's config adds
// serverTLSBootstrap (kubeadm's documented opt-in):
// kube-controller-manager signs the serving CSR once an administrator
// approves it (TestServingCertificate); until then the agent serves a
// self-signed certificate, which kube-apiserver without
// --kubelet-certificate-authority (kubeadm's default) does not verify.
func kubeletConfig(caFile string) string {
	return fmt.Sprintf(`authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
clusterDNS:
- %s
clusterDomain: cluster.local
`, caFile, clusterDNS)
}

// startAgent joins `nodeagent agent` to the cluster with a node client
// certificate (system:node:<name> in system:nodes) in --kubeconfig and
// waits for its Node to be Ready.
func startAgent(bin, dir string) (stop func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	if err := cl.writeClientKubeconfig(kubeconfig, "system:node:"+nodeName, []string{"system:nodes"}); err != nil {
		return nil, err
	}
	a, err := framework.NewAgent(bin, dir)
	if err != nil {
		return nil, err
	}
	a.NodeName = nodeName
	// The agent's service proxy in place of kube-proxy (TestServiceProxy).
	a.ExtraArgs = []string{"--kubeconfig", kubeconfig, "--service-proxy"}
	if err := a.AppendConfig(kubeletConfig(cl.pkiPath("ca.crt"))); err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	agent = a
	stop = func() error {
		errs := []error{a.Stop(), framework.SweepSandboxes(cri), framework.UnmountUnder(a.Dir)}
		if os.Getenv("REALCLUSTER_LOGS") != "" {
			fmt.Printf("agent log:\n%s\n", a.Logs())
		}
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	}
	if err := waitNodeReady(2 * time.Minute); err != nil {
		_ = stop()
		return nil, fmt.Errorf("%w\nagent log:\n%s", err, a.Logs())
	}
	return stop, nil
}

// waitNodeReady waits for the agent's Node to report Ready.
func waitNodeReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := cl.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		cancel()
		if err != nil {
			last = err.Error()
		} else {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady {
					last = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
					if c.Status == v1.ConditionTrue {
						return nil
					}
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("node %s not Ready after %s: %s", nodeName, timeout, last)
}

// hadProxyTable reports whether the service proxy's nftables table exists.
func hadProxyTable() bool {
	return exec.Command("nft", "list", "table", "ip", proxy.TableName).Run() == nil
}

// deleteProxyTable deletes the service proxy's nftables table if it exists.
func deleteProxyTable() error {
	if !hadProxyTable() {
		return nil
	}
	if out, err := exec.Command("nft", "delete", "table", "ip", proxy.TableName).CombinedOutput(); err != nil {
		return fmt.Errorf("nft delete table ip %s: %v: %s", proxy.TableName, err, out)
	}
	return nil
}

func clusterRoleBinding(name, role string, group string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
}
