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
// missing or its limits differ from the last ones written (a restarted
// agent writes once again, the same values).
func (m *Manager) Ensure(name string, pod *v1.Pod) error {
	rc := ForPod(pod, m.opts)
	m.mu.Lock()
	last, ok := m.applied[name]
	m.mu.Unlock()
	if ok && reflect.DeepEqual(last, rc) && m.fs.Exists(name) {
		return nil
	}
	if err := m.fs.Apply(name, rc); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", name, err)
	}
	m.mu.Lock()
	m.applied[name] = rc
	m.mu.Unlock()
	return nil
}

// Forget drops what Ensure wrote to name, once the cgroup is removed.
func (m *Manager) Forget(name string) {
	m.mu.Lock()
	delete(m.applied, name)
	m.mu.Unlock()
}
