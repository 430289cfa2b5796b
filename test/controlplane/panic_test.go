package controlplane_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// panicHeader makes the shared server's API serve hook panic with the
// header's value: a stand-in for a bug in a handler.
const panicHeader = "X-Nodeagent-Test-Panic"

func panicOnHeader(r *http.Request) {
	if v := r.Header.Get(panicHeader); v != "" {
		panic(v)
	}
}

// TestHandlerPanicIsAnsweredAndServingGoesOn: issue 16, finding 6. A
// panic in a request is answered with upstream's 500, counted, and the
// server (etcd, API server, controllers) keeps serving.
func TestHandlerPanicIsAnsweredAndServingGoesOn(t *testing.T) {
	errors500 := map[string]string{"verb": "LIST", "resource": "configmaps", "scope": "namespace", "code": "500"}
	panics := map[string]string{"component": "apiserver", "kind": "http"}
	before := scrapeMetrics(t)

	rc, err := clientcmd.BuildConfigFromFlags("", adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	err = cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").
		SetHeader(panicHeader, "injected bug").Do(ctx).Error()
	// client-go turns upstream's plain-text 500 into this InternalError.
	want := `an error on the server ("` + crash.PanicMessage + `") has prevented the request from succeeding (get configmaps)`
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusInternalServerError || err.Error() != want {
		t.Errorf("panicking request: %v, want a 500: %s", err, want)
	}

	// The same server still serves, the same client on the same connection pool.
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list after the panic: %v", err)
	}
	mustKubectl(t, "get", "--raw", "/readyz")

	after := scrapeMetrics(t)
	if got := sampleSum(after, "apiserver_request_total", errors500) - sampleSum(before, "apiserver_request_total", errors500); got != 1 {
		t.Errorf("apiserver_request_total%v moved by %v, want 1", errors500, got)
	}
	if got := sampleSum(after, "nodeagent_recovered_panics_total", panics) - sampleSum(before, "nodeagent_recovered_panics_total", panics); got != 1 {
		t.Errorf("nodeagent_recovered_panics_total%v moved by %v, want 1", panics, got)
	}
}
