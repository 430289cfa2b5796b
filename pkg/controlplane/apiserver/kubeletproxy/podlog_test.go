package kubeletproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy/kubelettest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

func TestPodLogProxiesToTheKubelet(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")

	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	out, err := h.client.CoreV1().Pods(ns).GetLogs("web", &v1.PodLogOptions{
		Previous: true, Timestamps: true, SinceTime: &since, TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](100),
	}).DoRaw(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := ns + "/web/c line 1\n" + ns + "/web/c line 2\n"; string(out) != want {
		t.Errorf("log: got %q, want %q", out, want)
	}
	req, ok := h.kubelet.Last("/containerLogs/" + ns + "/web/c")
	if !ok {
		t.Fatalf("the kubelet got no log request: %+v", h.kubelet.Requests())
	}
	want := url.Values{"previous": {"true"}, "timestamps": {"true"}, "sinceTime": {"2026-01-02T03:04:05Z"}, "tailLines": {"5"}, "limitBytes": {"100"}}
	if req.Query.Encode() != want.Encode() {
		t.Errorf("kubelet query: got %q, want %q", req.Query.Encode(), want.Encode())
	}
	if req.ClientCN != pki.KubeletClientUser || len(req.ClientOrgs) != 1 || req.ClientOrgs[0] != pki.KubeletClientGroup {
		t.Errorf("client certificate: got CN %q O %v", req.ClientCN, req.ClientOrgs)
	}
}

func TestPodLogErrors(t *testing.T) {
	h := newKubeletHarness(t, nil)
	ns := h.namespace(t)
	h.addPod(t, ns, "pending", "", "c")
	h.addPod(t, ns, "two", "n1", "a", "b")
	h.addPod(t, ns, "waiting", "n1", "c")
	h.addPod(t, ns, "lost", "gone", "c")
	h.addNode(t, "bare", "", 0)
	h.addPod(t, ns, "bare", "bare", "c")
	tests := []struct {
		pod, query string
		code       int
		msg        string
	}{
		{"pending", "", http.StatusNoContent, ""},
		{"two", "", http.StatusBadRequest, "a container name must be specified for pod two, choose one of: [a b]"},
		{"two", "container=x", http.StatusBadRequest, "container x is not valid for pod two"},
		{"waiting", "", http.StatusBadRequest, `container "c" in pod "waiting" is waiting to start: ContainerCreating`},
		{"web", "", http.StatusNotFound, `pods "web" not found`},
		{"lost", "", http.StatusNotFound, `nodes "gone" not found`},
		{"bare", "", http.StatusInternalServerError, "no preferred addresses found; known addresses: []"},
		{"two", "container=a&tailLines=-1", http.StatusUnprocessableEntity, `PodLogOptions "two" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{"two", "container=a&sinceSeconds=1&sinceTime=2026-01-02T03:04:05Z", http.StatusUnprocessableEntity, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"two", "container=a&limitBytes=x", http.StatusBadRequest, `strconv.ParseInt: parsing "x": invalid syntax`},
	}
	for _, tc := range tests {
		resp, err := http.Get(fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/log?%s", h.url, ns, tc.pod, tc.query))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s?%s: got %d %s, want %d", tc.pod, tc.query, resp.StatusCode, body, tc.code)
			continue
		}
		if tc.msg == "" {
			if len(body) != 0 {
				t.Errorf("%s?%s: got body %q, want none", tc.pod, tc.query, body)
			}
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil || !strings.Contains(st.Message, tc.msg) {
			t.Errorf("%s?%s: got %s, want message %q", tc.pod, tc.query, body, tc.msg)
		}
	}
	// The client's view: kubectl prints the message of the API error.
	err := h.client.CoreV1().Pods(ns).GetLogs("waiting", &v1.PodLogOptions{}).Do(ctxT(t)).Error()
	if !apierrors.IsBadRequest(err) || err.Error() != `container "c" in pod "waiting" is waiting to start: ContainerCreating` {
		t.Errorf("client error: got %v", err)
	}
}

func TestPodLogFollowFlushesAsTheKubeletWrites(t *testing.T) {
	release := make(chan struct{})
	logs := func(w http.ResponseWriter, r *http.Request, _, _, _ string) {
		if r.URL.Query().Get("follow") != "true" {
			http.Error(w, "follow expected", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "second")
	}
	h := newKubeletHarness(t, kubelettest.LogFunc(logs))
	ns := h.namespace(t)
	h.addPod(t, ns, "web", "n1", "c")
	stream, err := h.client.CoreV1().Pods(ns).GetLogs("web", &v1.PodLogOptions{Follow: true}).Stream(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	lines := bufio.NewReader(stream)
	// The first line arrives while the kubelet still holds the stream open.
	if l, err := lines.ReadString('\n'); err != nil || l != "first\n" {
		t.Fatalf("first line: got %q, %v", l, err)
	}
	close(release)
	if l, err := lines.ReadString('\n'); err != nil || l != "second\n" {
		t.Fatalf("second line: got %q, %v", l, err)
	}
	if _, err := lines.ReadString('\n'); err != io.EOF {
		t.Errorf("after the kubelet ended the stream: got %v, want EOF", err)
	}
}
