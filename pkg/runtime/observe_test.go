package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

// versionOnly is a CRI server that answers Version and nothing else (the
// rest is Unimplemented, as an older runtime's missing calls are).
type versionOnly struct {
	criv1.UnimplementedRuntimeServiceServer
}

func (versionOnly) Version(context.Context, *criv1.VersionRequest) (*criv1.VersionResponse, error) {
	return &criv1.VersionResponse{RuntimeName: "fake"}, nil
}

func serveCRI(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	criv1.RegisterRuntimeServiceServer(srv, versionOnly{})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}

type call struct {
	method string
	err    error
}

func TestCallObserverSeesEveryCall(t *testing.T) {
	var mu sync.Mutex
	var calls []call
	observe := func(method string, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{method, err})
	}
	c, err := Dial(context.Background(), serveCRI(t), 5*time.Second, WithCallObserver(observe))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Version(context.Background(), "v1"); err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPodSandboxStats(context.Background(), nil)
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("ListPodSandboxStats: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0].method != "/runtime.v1.RuntimeService/Version" || calls[0].err != nil ||
		calls[1].method != "/runtime.v1.RuntimeService/ListPodSandboxStats" || status.Code(calls[1].err) != codes.Unimplemented {
		t.Errorf("observed %+v", calls)
	}
}

func TestPLEGListedSeesTheRelist(t *testing.T) {
	rt := critest.NewFakeRuntimeService()
	if _, err := rt.RunPodSandbox(context.Background(), &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: "a"}}, ""); err != nil {
		t.Fatal(err)
	}
	p := NewPLEG(rt, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var sandboxes int
	p.Listed = func(sbs []*criv1.PodSandbox, _ []*criv1.Container) { sandboxes = len(sbs) }
	if _, err := p.Relist(context.Background()); err != nil || sandboxes != 1 {
		t.Errorf("listed %d sandboxes, %v", sandboxes, err)
	}
	sandboxes = -1
	rt.InjectError("ListContainers", errors.New("down"))
	if _, err := p.Relist(context.Background()); err == nil || sandboxes != -1 {
		t.Errorf("a failed relist was reported (%d), %v", sandboxes, err)
	}
}
