package podworker

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/userns"
)

// usernsRuntime is the cri-api fake as a runtime that announces user
// namespace support for its default handler (as containerd 2 does), and
// that keeps the sandbox and container configs it was sent.
type usernsRuntime struct {
	*critest.FakeRuntimeService

	mu         sync.Mutex
	sandboxes  map[string]*criv1.PodSandboxConfig // by pod name
	containers map[string]*criv1.ContainerConfig  // by pod name
}

func (r *usernsRuntime) Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error) {
	resp, err := r.FakeRuntimeService.Status(ctx, verbose)
	if err != nil {
		return nil, err
	}
	resp.RuntimeHandlers = []*criv1.RuntimeHandler{{Name: "", Features: &criv1.RuntimeHandlerFeatures{UserNamespaces: true}}}
	return resp, nil
}

func (r *usernsRuntime) RunPodSandbox(ctx context.Context, cfg *criv1.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	r.sandboxes[cfg.Metadata.Name] = proto.Clone(cfg).(*criv1.PodSandboxConfig)
	r.mu.Unlock()
	return r.FakeRuntimeService.RunPodSandbox(ctx, cfg, handler)
}

func (r *usernsRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *criv1.ContainerConfig, sb *criv1.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	r.containers[sb.Metadata.Name] = proto.Clone(cfg).(*criv1.ContainerConfig)
	r.mu.Unlock()
	return r.FakeRuntimeService.CreateContainer(ctx, sandboxID, cfg, sb)
}

func (r *usernsRuntime) sent(pod string) (*criv1.UserNamespace, *criv1.UserNamespace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandboxes[pod].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(),
		r.containers[pod].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
}

// On a runtime that supports user namespaces, a hostUsers: false pod runs
// with a block of its own in RunPodSandbox and CreateContainer, recorded
// in its directory; an ordinary pod gets the node's user namespace. With
// a one-block range a second such pod waits with the kubelet's error
// until the first is removed, which frees the block.
func TestUserNamespaceMappings(t *testing.T) {
	h, rt, ev := startUsernsManager(t)

	plain := scenarioPod("plain", "busybox:1")
	first, second := scenarioPod("userns-a", "busybox:1"), scenarioPod("userns-b", "busybox:1")
	hostUsers := false
	first.Spec.HostUsers, second.Spec.HostUsers = &hostUsers, &hostUsers
	h.pods <- []*v1.Pod{plain, first}
	for _, p := range []*v1.Pod{plain, first} {
		eventually(t, p.Name+" running", func() (bool, string) { return allRunning(h.pod(p.UID)) })
	}

	want := &criv1.UserNamespace{Mode: criv1.NamespaceMode_POD,
		Uids: []*criv1.IDMapping{{HostId: 65536 * 4, ContainerId: 0, Length: 65536}},
		Gids: []*criv1.IDMapping{{HostId: 65536 * 4, ContainerId: 0, Length: 65536}}}
	sb, c := rt.sent("userns-a")
	if !proto.Equal(sb, want) || !proto.Equal(c, want) {
		t.Errorf("hostUsers false: sandbox userns %v, container %v; want %v for both", sb, c, want)
	}
	node := &criv1.UserNamespace{Mode: criv1.NamespaceMode_NODE}
	if sb, c := rt.sent("plain"); !proto.Equal(sb, node) || !proto.Equal(c, node) {
		t.Errorf("ordinary pod: sandbox userns %v, container %v; want mode NODE", sb, c)
	}
	record := filepath.Join(h.rootDir, "pods", string(first.UID), userns.MappingsFile)
	if _, err := os.Stat(record); err != nil {
		t.Errorf("mapping not recorded in the pod directory: %v", err)
	}

	h.pods <- []*v1.Pod{plain, first, second}
	const exhausted = "FailedCreatePodSandBox: Failed to create pod sandbox: create user namespace: could not find an empty slot to allocate a user namespace"
	eventually(t, "the exhaustion event", func() (bool, string) { return ev.has(exhausted) })
	if sb, _ := rt.sent("userns-b"); sb != nil {
		t.Fatalf("second pod got a sandbox (%v) from a range of one block", sb)
	}

	h.pods <- []*v1.Pod{plain, second}
	eventually(t, "userns-b running once userns-a is gone", func() (bool, string) { return allRunning(h.pod(second.UID)) })
	if sb, c := rt.sent("userns-b"); !proto.Equal(sb, want) || !proto.Equal(c, want) {
		t.Errorf("second pod: sandbox userns %v, container %v; want the freed block %v", sb, c, want)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("removed pod's record: %v, want it gone with its directory", err)
	}
}

// startUsernsManager runs a manager on usernsRuntime with an allocator
// whose range holds one block (host IDs 262144 to 327679).
func startUsernsManager(t *testing.T) (*harness, *usernsRuntime, *reasonEvents) {
	t.Helper()
	fake := critest.NewFakeRuntimeService()
	rt := &usernsRuntime{FakeRuntimeService: fake, sandboxes: map[string]*criv1.PodSandboxConfig{}, containers: map[string]*criv1.ContainerConfig{}}
	ev := &reasonEvents{}
	h := newManager(t, fake, critest.NewFakeImageService())
	h.m.cfg.Runtime, h.m.features.rt, h.m.events = rt, rt, ev
	alloc, err := userns.New(userns.Config{PodsDir: filepath.Join(h.rootDir, "pods"),
		FirstID: 65536 * 4, Length: 65536, MaxPods: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h.m.cfg.UserNamespaces = alloc
	h.start(t)
	return h, rt, ev
}

// A pod that finished for good gives its block back while it stays on
// the node (its containers kept for their logs), as the kubelet releases
// it once the pod is terminated.
func TestUserNamespaceFreedWhenPodFinishes(t *testing.T) {
	h, rt, _ := startUsernsManager(t)
	hostUsers := false
	job, next := scenarioPod("job", "busybox:1"), scenarioPod("next", "busybox:1")
	job.Spec.HostUsers, next.Spec.HostUsers = &hostUsers, &hostUsers
	job.Spec.RestartPolicy = v1.RestartPolicyNever
	h.pods <- []*v1.Pod{job}
	eventually(t, "job running", func() (bool, string) { return allRunning(h.pod(job.UID)) })
	sandboxID := critest.BuildSandboxName(&criv1.PodSandboxMetadata{Name: "job", Namespace: "default", Uid: "uid-job"})
	h.exitContainer(t, critest.BuildContainerName(&criv1.ContainerMetadata{Name: "c0"}, sandboxID), 0)
	h.events <- runtime.PodEvent{UID: job.UID}
	waitPhase(t, h, job.UID, v1.PodSucceeded)

	h.pods <- []*v1.Pod{job, next}
	eventually(t, "next running on the freed block", func() (bool, string) { return allRunning(h.pod(next.UID)) })
	if sb, _ := rt.sent("next"); sb.GetUids()[0].GetHostId() != 65536*4 {
		t.Errorf("next pod's user namespace = %v, want the finished pod's block", sb)
	}
}
