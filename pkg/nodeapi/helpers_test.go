package nodeapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type podList []*v1.Pod

func (l podList) Pods() []*v1.Pod { return l }

// fakeRuntime is a CRI stand-in: container statuses by ID, sandboxes and
// containers to list, and one streaming URL for every session; it records
// the streaming requests.
type fakeRuntime struct {
	mu         sync.Mutex
	statuses   map[string]*criv1.ContainerStatus
	sandboxes  []*criv1.PodSandbox
	containers []*criv1.Container
	url        string
	streamErr  error
	execs      []*criv1.ExecRequest
	attaches   []*criv1.AttachRequest
	forwards   []*criv1.PortForwardRequest
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*criv1.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %s not found", id)
	}
	return &criv1.ContainerStatusResponse{Status: proto.Clone(st).(*criv1.ContainerStatus)}, nil
}

func (f *fakeRuntime) setState(id string, state criv1.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[id].State = state
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error) {
	var out []*criv1.PodSandbox
	for _, sb := range f.sandboxes {
		if filter.GetState() != nil && sb.State != filter.GetState().GetState() {
			continue
		}
		if !matches(sb.Labels, filter.GetLabelSelector()) {
			continue
		}
		out = append(out, sb)
	}
	return out, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error) {
	var out []*criv1.Container
	for _, c := range f.containers {
		if filter.GetState() == nil || c.State == filter.GetState().GetState() {
			out = append(out, c)
		}
	}
	return out, nil
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) Exec(_ context.Context, req *criv1.ExecRequest) (*criv1.ExecResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, req)
	if f.streamErr != nil {
		return nil, f.streamErr
	}
	return &criv1.ExecResponse{Url: f.url}, nil
}

func (f *fakeRuntime) Attach(_ context.Context, req *criv1.AttachRequest) (*criv1.AttachResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attaches = append(f.attaches, req)
	if f.streamErr != nil {
		return nil, f.streamErr
	}
	return &criv1.AttachResponse{Url: f.url}, nil
}

func (f *fakeRuntime) PortForward(_ context.Context, req *criv1.PortForwardRequest) (*criv1.PortForwardResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forwards = append(f.forwards, req)
	if f.streamErr != nil {
		return nil, f.streamErr
	}
	return &criv1.PortForwardResponse{Url: f.url}, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openServer is a node API that lets everyone in (anonymous,
// AlwaysAllow), for tests of the endpoints themselves.
func openServer(t *testing.T, pods podList, rt *fakeRuntime) *Server {
	t.Helper()
	s, err := New(Config{
		NodeName: "node1", Pods: pods, Runtime: rt,
		Authenticator: NewAuthenticator(AuthnConfig{Anonymous: true}),
		Authorizer:    AlwaysAllow(),
		Configz:       map[string]any{"port": 10250},
		Logger:        quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

func ioReadFull(resp *http.Response, buf []byte) (int, error) { return io.ReadFull(resp.Body, buf) }
