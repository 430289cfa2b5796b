package probe

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Config wires a Manager.
type Config struct {
	Exec   Execer
	Events EventRecorder
	// OnChange is called (without locks held) when a cached result changes:
	// the pod worker re-syncs the pod to kill a failing container or to
	// update readiness.
	OnChange func(types.UID)
	Clock    clock.WithTicker // default: the real clock
	// Jitter is the delay before the first probe right after start
	// (default: uniformly random within the period).
	Jitter func(period time.Duration) time.Duration
	Logger *slog.Logger
	// Metrics, when set, counts and times the probes.
	Metrics Observer
}

// Manager owns the probe workers and their cached results.
type Manager struct {
	prober   *prober
	metrics  Observer
	onChange func(types.UID)
	clock    clock.WithTicker
	jitter   func(time.Duration) time.Duration
	log      *slog.Logger
	start    time.Time
	ctx      context.Context
	cancel   context.CancelFunc

	mu       sync.Mutex
	workers  map[workerKey]*worker
	results  map[resultKey]Result
	statuses map[types.UID]*v1.PodStatus
	wg       sync.WaitGroup
}

type workerKey struct {
	uid       types.UID
	container string
	kind      Kind
}

type resultKey struct {
	kind        Kind
	containerID string
}

// NewManager returns a manager whose workers probe under ctx (the
// agent's): when it ends, probes in flight are cancelled and the workers
// stop. Close stops every worker and waits for them.
func NewManager(ctx context.Context, cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(p time.Duration) time.Duration { return rand.N(p) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func(types.UID) {}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Manager{
		prober:  &prober{exec: cfg.Exec, events: cfg.Events},
		metrics: cfg.Metrics, onChange: cfg.OnChange, clock: cfg.Clock, jitter: cfg.Jitter, log: cfg.Logger,
		start: cfg.Clock.Now(), ctx: ctx, cancel: cancel,
		workers:  map[workerKey]*worker{},
		results:  map[resultKey]Result{},
		statuses: map[types.UID]*v1.PodStatus{},
	}
}

// AddPod starts a worker for every probe of the pod's containers (and of
// its sidecars: init containers that restart always) that has none.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range probedContainers(pod) {
		for _, k := range []Kind{Startup, Liveness, Readiness} {
			spec := probeOf(c, k)
			key := workerKey{pod.UID, c.Name, k}
			if spec == nil || m.workers[key] != nil {
				continue
			}
			w := &worker{m: m, key: key, pod: pod, container: c, spec: spec,
				stop: make(chan struct{}), trigger: make(chan struct{}, 1), lastResult: Unknown}
			m.workers[key] = w
			m.wg.Add(1)
			go w.run(m.ctx)
		}
	}
}

func probedContainers(pod *v1.Pod) []*v1.Container {
	var cs []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsSidecar(c) {
			cs = append(cs, c)
		}
	}
	for i := range pod.Spec.Containers {
		cs = append(cs, &pod.Spec.Containers[i])
	}
	return cs
}

// StopLivenessAndStartup stops those workers of a pod that is terminating:
// a container being stopped must not be killed again by its probes.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.stopWorkers(uid, func(k Kind) bool { return k != Readiness })
}

// RemovePod stops the pod's workers and forgets its status.
func (m *Manager) RemovePod(uid types.UID) {
	m.stopWorkers(uid, func(Kind) bool { return true })
	m.mu.Lock()
	delete(m.statuses, uid)
	m.mu.Unlock()
}

func (m *Manager) stopWorkers(uid types.UID, which func(Kind) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.uid == uid && which(key.kind) {
			close(w.stop)
			delete(m.workers, key)
		}
	}
}

// workerDone forgets the results of a worker that ended.
func (m *Manager) workerDone(w *worker) {
	m.mu.Lock()
	cur := m.workers[w.key]
	if cur == w {
		delete(m.workers, w.key)
	}
	replaced := cur != nil && cur != w // a pod re-added under the same UID keeps its results
	if !replaced {
		delete(m.results, resultKey{w.key.kind, runtimeID(w.containerID)})
	}
	m.mu.Unlock()
	if !replaced {
		m.metrics.ProbeWorkerDone(string(w.key.kind), w.pod, w.container.Name)
	}
	m.wg.Done()
}

// Close stops every worker and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	for key, w := range m.workers {
		close(w.stop)
		delete(m.workers, key)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// SetPodStatus records the pod's latest status as the pod worker computed
// it: the workers read container IDs, states and the pod IP from it.
func (m *Manager) SetPodStatus(uid types.UID, s *v1.PodStatus) {
	m.mu.Lock()
	m.statuses[uid] = s.DeepCopy()
	m.mu.Unlock()
}

func (m *Manager) podStatus(uid types.UID) (*v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.statuses[uid]
	return s, ok
}

// Get is the cached result of a container instance's probe of kind k; the
// ID may be the runtime's or the status's ("containerd://<id>").
func (m *Manager) Get(k Kind, containerID string) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[resultKey{k, runtimeID(containerID)}]
	return r, ok
}

func (m *Manager) set(w *worker, r Result) {
	select {
	case <-w.stop:
		return // stopped while probing: its result no longer counts
	default:
	}
	key, containerID := w.key, w.containerID
	m.mu.Lock()
	rk := resultKey{key.kind, runtimeID(containerID)}
	old, had := m.results[rk]
	m.results[rk] = r
	m.mu.Unlock()
	if !had || old != r {
		m.log.Debug("probe result", "pod", key.uid, "container", key.container, "probe", key.kind, "result", r)
		m.onChange(key.uid)
	}
}

func (m *Manager) forget(k Kind, containerID string) {
	if containerID == "" {
		return
	}
	m.mu.Lock()
	delete(m.results, resultKey{k, runtimeID(containerID)})
	m.mu.Unlock()
}
