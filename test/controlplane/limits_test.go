package controlplane_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// copyBomb is issue 16's attack on a ConfigMap: each copy of /data into
// itself doubles it, so n copies make its 1 KiB n-fold doubled (16 MiB for
// 14, which is past the copy bound but small enough that a server without
// the bound fails the test instead of the machine; 30 made 83 MB in 10 s).
func copyBomb(n int) []byte {
	ops := []string{`{"op":"add","path":"/data/seed","value":"` + strings.Repeat("x", 1024) + `"}`}
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/k%d"}`, i))
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// wantStatus checks an API error's code and message.
func wantStatus(t *testing.T, what string, err error, code int32, message string) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("%s: got %v, want a %d %q", what, err, code, message)
	}
	if got := st.Status(); got.Code != code || got.Message != message {
		t.Fatalf("%s: got %d %q, want %d %q", what, got.Code, got.Message, code, message)
	}
}

// unprocessable is upstream's 422 for a JSON patch that does not apply
// (NewGenericServerResponse keeps only this generic message).
const unprocessable = "the server rejected our request due to an error in our request"

func TestJSONPatchCopiesRefused(t *testing.T) {
	ns, cs, ctx := namespace(t), clientset(t, adminConfig), t.Context()
	before, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("c"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Patch(ctx, "c", types.JSONPatchType, copyBomb(14), metav1.PatchOptions{})
	wantStatus(t, "copy bomb", err, http.StatusUnprocessableEntity, unprocessable)
	if !apierrors.IsInvalid(err) {
		t.Errorf("copy bomb: reason %q, want Invalid", apierrors.ReasonForError(err))
	}
	after, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || len(after.Data) != 1 {
		t.Errorf("object changed: resourceVersion %s -> %s, %d keys", before.ResourceVersion, after.ResourceVersion, len(after.Data))
	}
	// Within the bound, copies apply.
	got, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "c", types.JSONPatchType, []byte(`[{"op":"copy","from":"/data/k","path":"/data/k2"}]`), metav1.PatchOptions{})
	if err != nil || got.Data["k2"] != "v" {
		t.Errorf("a copy within the bound: %v %v", err, got)
	}
}

// TestJSONPatchCopiesByANode: node credentials are authorized before the
// patch is applied (upstream's order), and what they may patch is bounded
// like anyone's.
func TestJSONPatchCopiesByANode(t *testing.T) {
	const node = "e2e-limits-node"
	ns := namespace(t)
	cs := clientset(t, adminConfig)
	mustKubectl(t, "-n", ns, "create", "configmap", "c", "--from-literal=k=v")
	nodeCS := clientset(t, nodeKubeconfig(t, node))
	t.Cleanup(func() { _, _, _ = kubectl(t, "delete", "node", node, "--ignore-not-found") })
	if _, err := nodeCS.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := nodeCS.CoreV1().ConfigMaps(ns).Patch(t.Context(), "c", types.JSONPatchType, copyBomb(14), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("node patching a ConfigMap: got %v, want Forbidden before the patch is applied", err)
	}
	ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"seed":"` + strings.Repeat("x", 1024) + `"}}`}
	for i := range 14 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/m%d"}`, i))
	}
	bomb := []byte("[" + strings.Join(ops, ",") + "]")
	_, err = nodeCS.CoreV1().Nodes().Patch(t.Context(), node, types.JSONPatchType, bomb, metav1.PatchOptions{})
	wantStatus(t, "node's copy bomb on its Node", err, http.StatusUnprocessableEntity, unprocessable)
	got, err := cs.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("node changed: annotations %d", len(got.Annotations))
	}
}

func TestJSONPatchTooManyOperations(t *testing.T) {
	ns, cs, ctx := namespace(t), clientset(t, adminConfig), t.Context()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	op := `{"op":"add","path":"/data/k","value":"v"}`
	patch := func(n int) []byte { return []byte("[" + strings.Repeat(op+",", n-1) + op + "]") }
	_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "c", types.JSONPatchType, patch(10001), metav1.PatchOptions{})
	wantStatus(t, "10001 operations", err, http.StatusRequestEntityTooLarge,
		"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "c", types.JSONPatchType, patch(10000), metav1.PatchOptions{}); err != nil {
		t.Errorf("10000 operations: %v", err)
	}
}

func TestRequestBodyTooLarge(t *testing.T) {
	ns, cs, ctx := namespace(t), clientset(t, adminConfig), t.Context()
	const tooLarge = "Request entity too large: limit is 3145728"
	big := configMap("big")
	big.Data["k"] = strings.Repeat("x", 4<<20)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, big, metav1.CreateOptions{})
	wantStatus(t, "4 MiB create", err, http.StatusRequestEntityTooLarge, tooLarge)

	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	merge := []byte(`{"data":{"k":"` + strings.Repeat("x", 4<<20) + `"}}`)
	_, err = cs.CoreV1().ConfigMaps(ns).Patch(ctx, "c", types.MergePatchType, merge, metav1.PatchOptions{})
	wantStatus(t, "4 MiB merge patch", err, http.StatusRequestEntityTooLarge, tooLarge)

	// With kubectl, as users see it.
	path := writeFile(t, "big.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  k: "+strings.Repeat("x", 4<<20)+"\n")
	if stderr := kubectlFails(t, adminConfig, "-n", ns, "create", "-f", path); !strings.Contains(stderr, tooLarge) {
		t.Errorf("kubectl create: %q, want %q", stderr, tooLarge)
	}
}

// TestObjectTooLargeForEtcd: a body under the 3 MiB limit whose object is
// over etcd's 1.5 MiB request limit gets kube-apiserver's answer, etcd's
// error as it is. A 2 MB ConfigMap does not get that far: upstream's
// validation refuses more than 1 MiB of data.
func TestObjectTooLargeForEtcd(t *testing.T) {
	ns, cs, ctx := namespace(t), clientset(t, adminConfig), t.Context()
	big := configMap("big")
	big.Data["k"] = strings.Repeat("x", 2_000_000)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, big, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("2 MB ConfigMap: got %v, want Invalid (over 1 MiB of data)", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox:1", Args: []string{strings.Repeat("x", 2_000_000)}}}}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	wantStatus(t, "2 MB pod", err, http.StatusInternalServerError, "etcdserver: request is too large")
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		t.Errorf("2 MB pod: reason %q, want none (upstream's for an error that is not a Status)", reason)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the refused create: %v, want NotFound", err)
	}
}

// TestMaxMutatingRequestsInFlight saturates a server started with
// --max-mutating-requests-inflight=1: a node's create is held in the
// handler (its body is not sent until the server asks for it with 100
// Continue, which it does only once the request holds the slot), so the
// next mutating request is refused for sure.
func TestMaxMutatingRequestsInFlight(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	cfg.MaxMutatingRequestsInFlight = 1
	s, err := startServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	url := cfg.LocalURL()
	kc := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := server.WriteNodeKubeconfig(cfg.DataDir, "e2e-inflight", url, kc); err != nil {
		t.Fatal(err)
	}
	client := http1Client(t, kc)

	release := holdMutatingSlot(t, client, url)
	create := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/api/v1/nodes", strings.NewReader(`{"metadata":{"name":"e2e-inflight"}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := create()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		string(body) != "Too many requests, please try again later.\n" {
		t.Errorf("mutating request over the limit: %d Retry-After=%q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Long-running requests are not counted: exec reaches authorization.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/api/v1/namespaces/default/pods/none/exec?command=true", nil)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			t.Error("exec was counted as a mutating request")
		}
	}
	// Read-only requests have their own limit.
	if resp, err := client.Get(url + "/api/v1/nodes/e2e-inflight"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			t.Error("a get was refused by the mutating limit")
		}
	}
	// system:masters are always served.
	admin := clientset(t, s.kubeconfig())
	if _, err := admin.CoreV1().ConfigMaps("default").Create(t.Context(), configMap("admin"), metav1.CreateOptions{}); err != nil {
		t.Errorf("admin's create with the slot taken: %v", err)
	}
	if code := release(); code == http.StatusTooManyRequests {
		t.Errorf("the held request got %d", code)
	}
}

// http1Client is a client of kubeconfig's credentials over HTTP/1.1,
// which reports 100 Continue to httptrace.
func http1Client(t *testing.T, kubeconfig string) *http.Client {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg = tlsCfg.Clone()
	tlsCfg.NextProtos = []string{"http/1.1"}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ExpectContinueTimeout: time.Hour, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// holdMutatingSlot starts a create whose body waits until the server
// reads it, which the handler does only after the in-flight filter gave
// it a slot. The returned release sends the body and returns the status.
// Until it holds the slot (the server's controllers, as system:masters,
// may hold it a moment), it is retried.
func holdMutatingSlot(t *testing.T, client *http.Client, url string) (release func() int) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		pr, pw := io.Pipe()
		continued := make(chan struct{})
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{Got100Continue: func() { close(continued) }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/nodes", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		done := make(chan *http.Response, 1)
		go func() {
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("held request: %v", err)
				close(done)
				return
			}
			done <- resp
		}()
		select {
		case <-continued:
			return func() int {
				_, _ = io.Copy(pw, bytes.NewReader([]byte(`{"metadata":{"name":"e2e-inflight"}}`)))
				pw.Close()
				resp, ok := <-done
				if !ok {
					return 0
				}
				resp.Body.Close()
				return resp.StatusCode
			}
		case resp, ok := <-done:
			pw.Close()
			if !ok {
				t.FailNow()
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests || attempt == 100 {
				t.Fatalf("holding the slot, attempt %d: %d", attempt, resp.StatusCode)
			}
		}
	}
}
