package lifecycle

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

type fakeExec struct {
	res *runtime.ExecResult
	err error
	got []string
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) (*runtime.ExecResult, error) {
	f.got = append([]string{id}, cmd...)
	return f.res, f.err
}

var (
	pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	ctr = &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
)

func TestExecHook(t *testing.T) {
	h := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "exit 3"}}}
	ex := &fakeExec{res: &runtime.ExecResult{Stderr: []byte("boom"), ExitCode: 3}}
	msg, err := (&Runner{Exec: ex}).Run(context.Background(), pod, ctr, "cid", "", h)
	if err == nil {
		t.Fatal("a non-zero exit must fail the hook")
	}
	want := `Exec lifecycle hook ([sh -c exit 3]) for Container "c" in Pod "p_ns(u1)" failed - error: command 'sh -c exit 3' exited with 3: boom, message: "boom"`
	if msg != want {
		t.Errorf("message:\n got %s\nwant %s", msg, want)
	}
	if strings.Join(ex.got, " ") != "cid sh -c exit 3" {
		t.Errorf("exec ran %v", ex.got)
	}
	ex.res = &runtime.ExecResult{Stdout: []byte("ok")}
	if msg, err := (&Runner{Exec: ex}).Run(context.Background(), pod, ctr, "cid", "", h); err != nil || msg != "" {
		t.Errorf("exit 0: msg %q err %v", msg, err)
	}
}

func TestHTTPHook(t *testing.T) {
	var gotPath, gotUA string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotUA = r.URL.Path, r.UserAgent()
		w.WriteHeader(http.StatusInternalServerError) // status codes do not fail hooks
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	c := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(p)}}}
	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/hook", Port: intstr.FromString("web")}}
	if msg, err := (&Runner{}).Run(context.Background(), pod, c, "cid", host, h); err != nil {
		t.Fatalf("hook: %s (%v)", msg, err)
	}
	if gotPath != "/hook" || gotUA != userAgent {
		t.Errorf("server saw path %q user agent %q", gotPath, gotUA)
	}
	srv.Close()
	msg, err := (&Runner{}).Run(context.Background(), pod, c, "cid", host, h)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/hook) for Container "c" in Pod "p_ns(u1)" failed - error: `) {
		t.Errorf("closed server: msg %q err %v", msg, err)
	}
}

func TestSleepHookEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}}
	msg, err := (&Runner{}).Run(ctx, pod, ctr, "cid", "", h)
	if err == nil || !strings.Contains(msg, "container terminated before sleep hook finished") {
		t.Errorf("msg %q err %v", msg, err)
	}
	h.Sleep.Seconds = 0
	if _, err := (&Runner{}).Run(context.Background(), pod, ctr, "cid", "", h); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
}

func TestInvalidHandler(t *testing.T) {
	msg, err := (&Runner{}).Run(context.Background(), pod, ctr, "cid", "", &v1.LifecycleHandler{})
	if err == nil || !strings.HasPrefix(msg, "Cannot run handler: invalid handler") {
		t.Errorf("msg %q err %v", msg, err)
	}
}
