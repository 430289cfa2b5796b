package apiclient

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// The watch lists every namespace's services, reports when it has, and
// follows creations and deletions.
func TestServiceWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.5"}},
	)
	w, err := NewServiceWatch(cs)
	if err != nil {
		t.Fatal(err)
	}
	if w.HasSynced() {
		t.Fatal("HasSynced before the watch runs")
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), w.HasSynced) {
		t.Fatal("never synced")
	}
	names := func() map[string]bool {
		svcs, err := w.ListServices()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range svcs {
			out[s.Namespace+"/"+s.Name] = true
		}
		return out
	}
	if got := names(); !got["default/kubernetes"] || !got["ns/web"] || len(got) != 2 {
		t.Fatalf("listed %v, want default/kubernetes and ns/web", got)
	}
	if _, err := cs.CoreV1().Services("other").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got := names()
		return got["other/db"] && !got["ns/web"], nil
	})
	if err != nil {
		t.Fatalf("the watch did not follow: %v", names())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
