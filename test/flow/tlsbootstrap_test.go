package flow

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

const joinerName = "flow-joiner"

// An agent joins with only the bootstrap kubeconfig that `nodeagent
// server token create --print-join-command` writes: its client
// certificate comes from a CertificateSigningRequest the control plane
// approves and signs, --kubeconfig is written pointing at
// <root-dir>/pki/kubelet-client-current.pem, and with rotateCertificates
// it registers its Node and runs a pod.
func TestAgentJoinsWithBootstrapToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := framework.NewAgentOn(agentBin, dir, framework.TestInstance)
	if err != nil {
		t.Fatal(err)
	}
	a.NodeName = joinerName

	out, err := exec.Command(agentBin, "server", "token", "create", "--kubeconfig", filepath.Join(dataDir, server.KubeconfigFile),
		"--ttl", "10m", "--print-join-command", "--server", serverURL, "--node-root-dir", a.RootDir).CombinedOutput()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, out)
	}
	script := strings.TrimSuffix(string(out), "\n")
	i := strings.LastIndex(script, "\n")
	agentLine := script[i+1:]
	boot, kubeconfig := filepath.Join(a.RootDir, "bootstrap-kubeconfig"), filepath.Join(a.RootDir, "kubeconfig")
	if want := fmt.Sprintf("nodeagent agent --root-dir %s --bootstrap-kubeconfig %s --kubeconfig %s", a.RootDir, boot, kubeconfig); agentLine != want {
		t.Fatalf("agent command %q, want %q", agentLine, want)
	}
	if out, err := exec.Command("sh", "-c", script[:i+1]).CombinedOutput(); err != nil {
		t.Fatalf("join script: %v\n%s", err, out)
	}
	bootCfg, err := clientcmd.LoadFromFile(boot)
	if err != nil {
		t.Fatal(err)
	}
	token := bootCfg.AuthInfos[bootCfg.Contexts[bootCfg.CurrentContext].AuthInfo].Token
	if len(token) != 23 {
		t.Fatalf("bootstrap kubeconfig token %q", token)
	}
	id := token[:6]
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.CoreV1().Secrets("kube-system").Delete(ctx, "bootstrap-token-"+id, metav1.DeleteOptions{})
		csrs, _ := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if csrs != nil {
			for _, c := range csrs.Items {
				if c.Spec.Username == "system:bootstrap:"+id || c.Spec.Username == "system:node:"+joinerName {
					_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.Name, metav1.DeleteOptions{})
				}
			}
		}
		_ = admin.CoreV1().Nodes().Delete(ctx, joinerName, metav1.DeleteOptions{})
	})

	a.ExtraArgs = []string{"--bootstrap-kubeconfig", boot, "--kubeconfig", kubeconfig}
	if err := a.AppendConfig("rotateCertificates: true"); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		waitFor(t, apiTimeout, "the runtime to hold no sandbox", func() (bool, error) {
			sbs, err := cri.ListPodSandbox(context.Background(), nil)
			return err == nil && len(sbs) == 0, err
		})
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
		if err := framework.TestInstance.Sweep(cri); err != nil {
			t.Error(err)
		}
		if err := framework.UnmountUnder(a.Dir); err != nil {
			t.Error(err)
		}
		if t.Failed() || os.Getenv("FLOW_AGENT_LOG") != "" {
			t.Logf("agent %s log:\n%s", joinerName, a.Logs())
		}
	})
	waitServingCertIssued(t, a, joinerName)
	waitNodeSchedulable(t, joinerName)

	// The bootstrap request, approved as kube-controller-manager's
	// csrapprover approves it, and the kubelet's files.
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + certificatesv1.KubeAPIServerClientKubeletSignerName})
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(csrs.Items, func(c certificatesv1.CertificateSigningRequest) bool {
		return c.Spec.Username == "system:bootstrap:"+id
	})
	if j < 0 || len(csrs.Items[j].Status.Certificate) == 0 || !slices.Contains(csrs.Items[j].Spec.Groups, server.NodeBootstrapGroup) {
		t.Fatalf("no issued bootstrap request by system:bootstrap:%s in %d requests", id, len(csrs.Items))
	}
	current := filepath.Join(a.RootDir, "pki", "kubelet-client-current.pem")
	pair, err := tls.LoadX509KeyPair(current, current)
	if err != nil {
		t.Fatalf("client pair: %v", err)
	}
	if pair.Leaf.Subject.CommonName != "system:node:"+joinerName {
		t.Errorf("client certificate for %v", pair.Leaf.Subject)
	}
	written, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if ai := written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo]; ai.ClientCertificate != current || ai.Token != "" {
		t.Errorf("written kubeconfig user %+v", ai)
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "joiner-web", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName: joinerName,
			Containers: []v1.Container{{
				Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitPodGone(t, pod.Name) })
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	waitPodRunning(t, pod.Name)
}
