package podworker

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// fakeReferences records the pods registered with the object managers;
// dirGone tells whether the pod's directory was gone when it was
// unregistered.
type fakeReferences struct {
	rootDir string

	mu           sync.Mutex
	registered   map[types.UID]int
	unregistered map[types.UID]bool
	dirGone      map[types.UID]bool
}

func (f *fakeReferences) RegisterPod(pod *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered[pod.UID]++
}

func (f *fakeReferences) UnregisterPod(pod *v1.Pod) {
	_, err := os.Stat(filepath.Join(f.rootDir, "pods", string(pod.UID)))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unregistered[pod.UID] = true
	f.dirGone[pod.UID] = os.IsNotExist(err)
}

func (f *fakeReferences) state(uid types.UID) (registered int, unregistered, dirGone bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registered[uid], f.unregistered[uid], f.dirGone[uid]
}

func startWithReferences(t *testing.T) (*harness, *fakeReferences) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	refs := &fakeReferences{rootDir: h.rootDir, registered: map[types.UID]int{}, unregistered: map[types.UID]bool{}, dirGone: map[types.UID]bool{}}
	h.m.cfg.References = refs
	h.start(t)
	return h, refs
}

// TestObjectReferencesFollowThePod: a running pod is registered with the
// object managers (on its syncs), and unregistered once it was stopped
// and its directory (volumes included) removed, as the kubelet's
// SyncTerminatedPod does.
func TestObjectReferencesFollowThePod(t *testing.T) {
	h, refs := startWithReferences(t)
	pod := scenarioPod("refs", "busybox:1")
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	if n, gone, _ := refs.state(pod.UID); n == 0 || gone {
		t.Fatalf("running pod: registered %d times, unregistered %v", n, gone)
	}
	h.pods <- nil
	eventually(t, "the pod unregistered", func() (bool, string) {
		n, gone, dirGone := refs.state(pod.UID)
		return gone, fmt.Sprintf("registered %d, unregistered %v, dir gone %v", n, gone, dirGone)
	})
	if _, _, dirGone := refs.state(pod.UID); !dirGone {
		t.Error("unregistered before the pod's directory was removed")
	}
}

// TestObjectReferencesFinishedPod: a pod that finished no longer needs
// its objects, though it stays on the node until deleted.
func TestObjectReferencesFinishedPod(t *testing.T) {
	h, refs := startWithReferences(t)
	pod := scenarioPod("done", "busybox:1")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	h.pods <- []*v1.Pod{pod}
	eventually(t, "pod running", func() (bool, string) { return allRunning(h.pod(pod.UID)) })
	sandboxID := critest.BuildSandboxName(&criv1.PodSandboxMetadata{Name: "done", Namespace: "default", Uid: "uid-done"})
	h.exitContainer(t, critest.BuildContainerName(&criv1.ContainerMetadata{Name: "c0"}, sandboxID), 0)
	h.events <- runtime.PodEvent{UID: pod.UID}
	eventually(t, "the finished pod unregistered", func() (bool, string) {
		_, gone, _ := refs.state(pod.UID)
		return gone && h.pod(pod.UID).Status.Phase == v1.PodSucceeded, fmt.Sprintf("unregistered %v, phase %s", gone, h.pod(pod.UID).Status.Phase)
	})
}
