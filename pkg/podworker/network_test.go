package podworker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

// netEvents keeps each event's reason and message.
type netEvents struct {
	mu   sync.Mutex
	seen []string
}

func (r *netEvents) Eventf(_ apiruntime.Object, _, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, reason+": "+fmt.Sprintf(format, args...))
}

func (r *netEvents) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.seen {
		if e == s {
			return true
		}
	}
	return false
}

func TestPodsWaitForTheNetwork(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	events := &netEvents{}
	h.m.events, h.m.cfg.Events = events, events
	const why = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:no pod CIDR"
	var netErr atomic.Pointer[error]
	notReady := errors.New(why)
	netErr.Store(&notReady)
	h.m.cfg.Network = func() error { return *netErr.Load() }
	h.start(t)

	web, host := scenarioPod("web", "busybox:1"), scenarioPod("host", "busybox:1")
	host.Spec.HostNetwork = true
	h.pods <- []*v1.Pod{web, host}
	eventually(t, "the hostNetwork pod running", func() (bool, string) { return allRunning(h.pod(host.UID)) })
	eventually(t, "the NetworkNotReady event", func() (bool, string) {
		return events.has("NetworkNotReady: network is not ready: " + why), fmt.Sprint(events.seen)
	})
	got := h.pod(web.UID)
	if got == nil || got.Status.Phase != v1.PodPending || len(got.Status.ContainerStatuses) != 1 ||
		got.Status.ContainerStatuses[0].State.Waiting == nil || got.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("pod waiting for the network: %+v", got)
	}
	if sandboxes, _ := h.runtimeObjects(); len(sandboxes) != 1 {
		t.Fatalf("sandboxes = %v, want only the hostNetwork pod's", sandboxes)
	}

	var ready error
	netErr.Store(&ready)
	h.m.NetworkChanged()
	eventually(t, "the pod running once the network is ready", func() (bool, string) { return allRunning(h.pod(web.UID)) })
}
