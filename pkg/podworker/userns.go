package podworker

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// UserNamespaces allocates the user namespace mappings of pods with
// hostUsers: false (pkg/userns): one block of IDs per pod, recorded in
// the pod directory.
type UserNamespaces interface {
	GetOrCreate(uid types.UID) (*criv1.UserNamespace, error)
	Release(uid types.UID)
	CleanupOrphans(keep map[types.UID]bool) error
}

// errNoAllocator refuses hostUsers: false where the agent was built
// without an allocator (standalone tests).
var errNoAllocator = errors.New("this node agent was started without a user namespace allocator")

// setUserNamespace gives a hostUsers: false pod's sandbox its user
// namespace mappings, as the kubelet's GetOrCreateUserNamespaceMappings
// does each time it builds the pod's namespace options: the recorded
// block, or a new one when the sandbox is first created. Its containers
// take the sandbox's (ContainerInputs.UserNamespace).
func (w *worker) setUserNamespace(pod *v1.Pod, sb *criv1.PodSandboxConfig) error {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil
	}
	if w.d.userns == nil {
		return errNoAllocator
	}
	u, err := w.d.userns.GetOrCreate(pod.UID)
	if err != nil {
		return err
	}
	criconfig.WithUserNamespace(sb, u)
	return nil
}

// releaseUserNamespace frees the pod's block once nothing of it runs.
func (w *worker) releaseUserNamespace() {
	if w.d.userns != nil {
		w.d.userns.Release(w.uid)
	}
}

// cleanupUserNamespacesLocked frees the blocks of pods the agent and the
// runtime no longer know (the kubelet's housekeeping does the same).
func (m *Manager) cleanupUserNamespacesLocked(refs map[types.UID]runtime.PodRef) {
	if m.cfg.UserNamespaces == nil {
		return
	}
	keep := make(map[types.UID]bool, len(m.workers)+len(m.desired)+len(refs))
	for uid := range m.workers {
		keep[uid] = true
	}
	for uid := range m.desired {
		keep[uid] = true
	}
	for uid := range refs {
		keep[uid] = true
	}
	if err := m.cfg.UserNamespaces.CleanupOrphans(keep); err != nil {
		m.log.Warn("housekeeping: free user namespaces of removed pods", "err", err)
	}
}
