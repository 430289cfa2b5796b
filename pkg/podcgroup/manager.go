package podcgroup

import (
	"fmt"
	"reflect"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Manager creates the pod cgroups of one node and remembers what it
// wrote, so that a sync writes only when the limits change or the cgroup
// is gone.
type Manager struct {
	fs   FS
	opts Options

	mu      sync.Mutex
	applied map[string]ResourceConfig // by cgroup name
}

// NewManager manages pod cgroups under the cgroupfs mount root.
func NewManager(root string, opts Options) *Manager {
	return &Manager{fs: FS{Root: root}, opts: opts, applied: map[string]ResourceConfig{}}
}

// Ensure makes cgroup name (the pod's cgroup parent, as the sandbox
// config names it) exist with pod's limits. It writes when the cgroup is
// missing, as the kubelet's EnsureExists does, or when the limits differ
// from the ones this manager wrote. A cgroup found existing with nothing
// known about it (the agent restarted) is left as it is, as the kubelet
// leaves it: rewriting a running pod's memory limit can fail (EBUSY) and
// would then hold its sync up.
func (m *Manager) Ensure(name string, pod *v1.Pod) error {
	rc := ForPod(pod, m.opts)
	m.mu.Lock()
	last, known := m.applied[name]
	m.mu.Unlock()
	if m.fs.Exists(name) && (!known || reflect.DeepEqual(last, rc)) {
		m.remember(name, rc)
		return nil
	}
	if err := m.fs.Apply(name, rc); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", name, err)
	}
	m.remember(name, rc)
	return nil
}

func (m *Manager) remember(name string, rc ResourceConfig) {
	m.mu.Lock()
	m.applied[name] = rc
	m.mu.Unlock()
}

// Forget drops what Ensure wrote to name, once the cgroup is removed.
func (m *Manager) Forget(name string) {
	m.mu.Lock()
	delete(m.applied, name)
	m.mu.Unlock()
}
