package apiclient

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeRuntime answers Version and Status from its fields.
type fakeRuntime struct {
	mu       sync.Mutex
	status   *criv1.StatusResponse
	statusEr error
}

func (f *fakeRuntime) Version(context.Context, string) (*criv1.VersionResponse, error) {
	return &criv1.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "v2.1.0", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) Status(context.Context, bool) (*criv1.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.statusEr
}

func (f *fakeRuntime) set(runtimeReady, networkReady bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusEr = err
	f.status = &criv1.StatusResponse{Status: &criv1.RuntimeStatus{Conditions: []*criv1.RuntimeCondition{
		{Type: criv1.RuntimeReady, Status: runtimeReady},
		{Type: criv1.NetworkReady, Status: networkReady, Reason: reasonIf(!networkReady, "NetworkPluginNotReady"), Message: reasonIf(!networkReady, "cni plugin not initialized")},
	}}}
}

func reasonIf(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

var errDown = errors.New("connection refused")

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func resourceQ(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
