package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// The kubelet proxy's own tests serve it alone; this one goes through the
// whole server: routing, instrumentation (which must let the upgrade
// hijack the connection), pods and nodes read from storage.
func TestConnectThroughTheServer(t *testing.T) {
	h := newKubeletHarnessWith(t, nil, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	out, err := h.client.CoreV1().Pods(ns).GetLogs("web", &v1.PodLogOptions{}).DoRaw(ctxT(t))
	if want := ns + "/web/c line 1\n" + ns + "/web/c line 2\n"; err != nil || string(out) != want {
		t.Errorf("log: got %q %v, want %q", out, err, want)
	}
	u := h.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web").SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Command: []string{"echo", "hi"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	for name, newExecutor := range map[string]func() (remotecommand.Executor, error){
		"spdy": func() (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(h.config, http.MethodPost, u)
		},
		"websocket": func() (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(h.config, http.MethodGet, u.String())
		},
	} {
		ex, err := newExecutor()
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		if err := ex.StreamWithContext(ctxT(t), remotecommand.StreamOptions{Stdout: &stdout, Stderr: io.Discard}); err != nil || stdout.String() != "echo hi\n" {
			t.Errorf("%s exec: got %q %v", name, stdout.String(), err)
		}
	}
	if _, err := h.client.CoreV1().Pods(ns).GetLogs("nope", &v1.PodLogOptions{}).DoRaw(ctxT(t)); !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v", err)
	}
}
