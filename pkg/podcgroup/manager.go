package podcgroup

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Manager creates the pod cgroups of one node and remembers what it
// wrote, so that a sync writes only when the limits change or the cgroup
// is gone. With QOS set it is also the kubelet's QoS container manager:
// the pods it holds cgroups for are the active pods whose requests size
// the Burstable tier, rewritten when one comes, changes or goes, and at
// least every QOSPeriod (RunQOS).
type Manager struct {
	fs   FS
	opts Options

	mu      sync.Mutex
	applied map[string]ResourceConfig // by cgroup name
	// requests are the Burstable cpu requests (milli) of the pods held,
	// 0 for the other classes, by cgroup name.
	requests map[string]int64
	qosAt    time.Time  // the last QoS write
	qosMu    sync.Mutex // one QoS write at a time
}

// NewManager manages pod cgroups under the cgroupfs mount root.
func NewManager(root string, opts Options) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.QOSPeriod <= 0 {
		opts.QOSPeriod = QOSPeriod
	}
	return &Manager{fs: FS{Root: root}, opts: opts, applied: map[string]ResourceConfig{}, requests: map[string]int64{}}
}

// Ensure makes cgroup name (the pod's cgroup parent, as the sandbox
// config names it) exist with pod's limits. It writes when the cgroup is
// missing, as the kubelet's EnsureExists does, or when the limits differ
// from the ones this manager wrote. A cgroup found existing with nothing
// known about it (the agent restarted) is left as it is, as the kubelet
// leaves it: rewriting a running pod's memory limit can fail (EBUSY) and
// would then hold its sync up. A new pod, or a change of its cpu request,
// updates the QoS tiers first, as the kubelet does before it creates a
// pod cgroup.
func (m *Manager) Ensure(name string, pod *v1.Pod) error {
	rc := ForPod(pod, m.opts)
	m.mu.Lock()
	last, known := m.applied[name]
	request := burstableCPURequest(pod)
	prev, held := m.requests[name]
	m.requests[name] = request
	qosDue := !held || prev != request || !m.opts.Now().Before(m.qosAt.Add(m.opts.QOSPeriod))
	m.mu.Unlock()
	if qosDue {
		m.updateQOS()
	}
	exists := m.fs.Exists(name)
	if exists && (!known || reflect.DeepEqual(last, rc)) {
		m.remember(name, rc)
		return nil
	}
	op := OpCreate
	if exists {
		op = OpUpdate
	}
	start := m.opts.Now()
	err := m.fs.Apply(name, rc)
	m.Observe(op, m.opts.Now().Sub(start))
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", name, err)
	}
	m.remember(name, rc)
	return nil
}

// Observe reports one cgroup operation's duration to Options.Observe,
// for the writers outside the Manager (the pod cgroup removal).
func (m *Manager) Observe(operation string, d time.Duration) {
	if m.opts.Observe != nil {
		m.opts.Observe(operation, d)
	}
}

func (m *Manager) remember(name string, rc ResourceConfig) {
	m.mu.Lock()
	m.applied[name] = rc
	m.mu.Unlock()
}

// Forget drops what Ensure wrote to name, once the cgroup is removed; the
// pod no longer counts in the QoS tiers.
func (m *Manager) Forget(name string) {
	m.mu.Lock()
	delete(m.applied, name)
	_, had := m.requests[name]
	delete(m.requests, name)
	m.mu.Unlock()
	if had {
		m.updateQOS()
	}
}

// RunQOS rewrites the QoS tiers every Options.QOSPeriod until ctx ends, as the
// kubelet's periodic UpdateCgroups: what a pod sync did not write (no pod
// synced, or someone changed a tier) is put back within a period.
func (m *Manager) RunQOS(ctx context.Context) {
	if m.opts.QOS == nil {
		return
	}
	t := time.NewTicker(m.opts.QOSPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.updateQOS()
		}
	}
}

// updateQOS writes the QoS tiers from the pods held now. A failure is
// logged and left to the next update, as the kubelet does: the pod's own
// cgroup does not wait for it.
func (m *Manager) updateQOS() {
	if m.opts.QOS == nil {
		return
	}
	m.qosMu.Lock()
	defer m.qosMu.Unlock()
	m.mu.Lock()
	var milli int64
	for _, r := range m.requests {
		milli += r
	}
	m.qosAt = m.opts.Now()
	m.mu.Unlock()
	start := m.opts.Now()
	err := m.fs.ApplyQOS(*m.opts.QOS, planQOS(milli, m.opts.HugePageSizes))
	m.Observe(OpUpdate, m.opts.Now().Sub(start))
	if err != nil {
		m.opts.Log.Warn("failed to reserve QoS requests", "err", err)
	}
}
