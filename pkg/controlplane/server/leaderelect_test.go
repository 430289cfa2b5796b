package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestTwoServersElectOneScheduler runs two servers on one external etcd,
// the second with a copy of the first's PKI and encryption key (what a
// second server needs): both serve the API; the scheduler and the
// controller manager run on one at a time, holding upstream's Leases in
// kube-system; when the leader stops, the other takes both leases and
// schedules a pod created after the handover.
func TestTwoServersElectOneScheduler(t *testing.T) {
	external := externalEtcd(t)

	dirA := t.TempDir()
	a := start(t, external(dirA))
	aRunning := true
	defer func() {
		if aRunning {
			a.stop(t)
		}
	}()
	csA := clientset(t, dirA)
	leaders := func(cs kubernetes.Interface) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			var holders []string
			for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
				l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
				if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
					return false, name + " not held", nil
				}
				holders = append(holders, *l.Spec.HolderIdentity)
			}
			return holders[0] == holders[1], holders[0] + " " + holders[1], nil
		}
	}
	var holderA string
	waitFor(t, "server A to hold both leases", func(ctx context.Context) (bool, string, error) {
		ok, state, err := leaders(csA)(ctx)
		holderA = state
		return ok, state, err
	})

	dirB := t.TempDir()
	for _, d := range []string{"pki", filepath.Dir(EncryptionConfigFile)} {
		if err := os.CopyFS(filepath.Join(dirB, d), os.DirFS(filepath.Join(dirA, d))); err != nil {
			t.Fatal(err)
		}
	}
	b := start(t, external(dirB))
	defer b.stop(t)
	csB := clientset(t, dirB)
	if _, err := csB.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("server B serves: %v", err)
	}
	if ok, state, _ := leaders(csB)(t.Context()); !ok || state != holderA {
		t.Errorf("leases after B started: %q, want A's %q kept", state, holderA)
	}

	a.stop(t)
	aRunning = false
	waitFor(t, "server B to take both leases", func(ctx context.Context) (bool, string, error) {
		ok, state, err := leaders(csB)(ctx)
		return ok && state != holderA, state, err
	})
	createReadyNode(t, csB, "n1")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := csB.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod scheduled by server B", func(ctx context.Context) (bool, string, error) {
		p, err := csB.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.Spec.NodeName == "n1", "node " + p.Spec.NodeName, nil
	})
}
