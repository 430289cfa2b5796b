package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodeagent/nodeagent/pkg/clientcert"
)

// TestClientTLSBootstrap runs the real control plane (real etcd): a join
// token's bootstrap kubeconfig gets a node client certificate through a
// CertificateSigningRequest the approver approves (nodeclient) and the
// cluster CA signs; the node client registers its Node; renewing with the
// node's own certificate is approved as selfnodeclient. An expired or
// malformed token is refused (401), and a bootstrap token may do nothing
// but ask for certificates.
func TestClientTLSBootstrap(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1", EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t)}
	r := start(t, cfg)
	defer r.stop(t)
	admin := clientset(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}

	// The join bindings, as kubeadm's.
	for _, b := range joinBindings() {
		got, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil || got.RoleRef != b.RoleRef || !slices.Equal(got.Subjects, b.Subjects) {
			t.Errorf("binding %s: %+v %v", b.Name, got, err)
		}
	}

	token, err := GenerateBootstrapToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateJoinToken(ctx, admin, JoinToken{Token: token, TTL: time.Hour}, time.Now()); err != nil {
		t.Fatal(err)
	}
	anon := anonClient(t, dir)
	id := token[:6]
	if code, body := do(t, anon, rc.Host+"/api/v1/namespaces/default/pods", token); code != 403 ||
		!strings.Contains(body, `User \"system:bootstrap:`+id+`\" cannot list resource \"pods\"`) {
		t.Errorf("pods with the bootstrap token = %d %s, want 403 naming system:bootstrap:%s", code, body, id)
	}
	expired, _ := GenerateBootstrapToken()
	if _, err := CreateJoinToken(ctx, admin, JoinToken{Token: expired, TTL: time.Minute}, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"expired": expired, "wrong secret": id + ".0000000000000000", "malformed": id + "." + token[7:22]} {
		if code, body := do(t, anon, rc.Host+"/apis/certificates.k8s.io/v1/certificatesigningrequests", tok); code != 401 {
			t.Errorf("%s token = %d %s, want 401", name, code, body)
		}
	}

	// The agent's bootstrap.
	boot, err := BootstrapKubeconfig(rc.Host, rc.CAData, token)
	if err != nil {
		t.Fatal(err)
	}
	node := t.TempDir()
	bootPath, kubeconfig, certDir := filepath.Join(node, "bootstrap-kubeconfig"), filepath.Join(node, "kubeconfig"), filepath.Join(node, "pki")
	if err := os.WriteFile(bootPath, boot, 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := clientcert.LoadClientCert(ctx, clientcert.Bootstrap{Kubeconfig: kubeconfig, BootstrapKubeconfig: bootPath,
		CertDir: certDir, NodeName: "joiner", Logger: log}); err != nil {
		t.Fatal(err)
	}
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil || len(csrs.Items) != 1 {
		t.Fatalf("requests: %v %v", csrs, err)
	}
	csr := csrs.Items[0]
	if csr.Spec.Username != "system:bootstrap:"+id || !slices.Contains(csr.Spec.Groups, NodeBootstrapGroup) ||
		csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Errorf("request spec %+v", csr.Spec)
	}
	if msg := approvedMessage(&csr); msg != "Auto approving kubelet client certificate after SubjectAccessReview." {
		t.Errorf("approval %q", msg)
	}

	nodeRC, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	nodeClient := kubernetes.NewForConfigOrDie(nodeRC)
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joiner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the node registers with its certificate: %v", err)
	}
	defer func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), "joiner", metav1.DeleteOptions{}) }()
	if _, err := nodeClient.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node lists secrets: %v, want 403", err)
	}

	// Renewal with the node's own certificate: a fake clock past the
	// certificate's end makes the rotation due at once (and again after
	// it: the test stops it after the first).
	rotRC := rest.CopyConfig(nodeRC)
	rot, err := clientcert.NewRotating(clientcert.Rotation{Config: rotRC, CertDir: certDir, NodeName: "joiner", Logger: log,
		Clock: clocktesting.NewFakeClock(time.Now().Add(400 * 24 * time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	first := rot.Current().Leaf.SerialNumber
	rctx, stopRot := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rot.Run(rctx) }()
	deadline := time.Now().Add(time.Minute)
	for rot.Current().Leaf.SerialNumber.Cmp(first) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not renewed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopRot()
	<-done
	csrs, err = admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The rotation may have asked again before it stopped: one of the
	// node's own requests was approved as a renewal.
	renewed := slices.ContainsFunc(csrs.Items, func(c certificatesv1.CertificateSigningRequest) bool {
		return c.Spec.Username == "system:node:joiner" &&
			approvedMessage(&c) == "Auto approving self kubelet client certificate after SubjectAccessReview."
	})
	if !renewed {
		for _, c := range csrs.Items {
			t.Logf("request %s by %s: approved %q", c.Name, c.Spec.Username, approvedMessage(&c))
		}
		t.Fatal("no renewal request of the node approved as selfnodeclient")
	}
	// The clients of the rotating transport use the new certificate.
	rotClient := kubernetes.NewForConfigOrDie(rot.Config)
	if _, err := rotClient.CoreV1().Nodes().Get(ctx, "joiner", metav1.GetOptions{}); err != nil {
		t.Errorf("the node with its renewed certificate: %v", err)
	}
}

func approvedMessage(csr *certificatesv1.CertificateSigningRequest) string {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return c.Message
		}
	}
	return ""
}
