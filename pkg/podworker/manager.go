package podworker

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodeagent/nodeagent/pkg/lifecycle"
	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/probe"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/sysctl"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// Config holds what the workers need; Runtime, Images and NodeName are
// required.
type Config struct {
	Runtime     runtime.Runtime
	Images      runtime.Images
	RuntimeName string // from the CRI Version call: prefixes container IDs
	NodeName    string
	NodeIP      string
	RootDir     string // per-pod files live in <RootDir>/pods/<uid>
	PodLogsDir  string // the kubelet's /var/log/pods
	CgroupRoot  string // "" to let the runtime pick cgroups
	// FlatCgroups is cgroupsPerQOS off: pods run straight under
	// CgroupRoot, without pod cgroups (nor their limits).
	FlatCgroups bool
	// PodPidsLimit is podPidsLimit, the pod cgroup's pids.max (0 or -1:
	// unlimited).
	PodPidsLimit int64
	// SeccompDefault is KubeletConfiguration seccompDefault: containers
	// that set no seccomp profile get RuntimeDefault.
	SeccompDefault bool
	DNS            criconfig.DNS
	Allocatable    v1.ResourceList
	// NodeLabels are matched by pods' nodeSelector and required node
	// affinity at admission; kubernetes.io/hostname, kubernetes.io/os and
	// kubernetes.io/arch are added when missing.
	NodeLabels map[string]string
	// NodeTaints are the node's taints (the kubelet's registerWithTaints);
	// admission rejects pods that do not tolerate its NoExecute ones.
	NodeTaints []v1.Taint
	// Node, when set, returns the node's API object (read only), whose
	// labels and taints admission then uses instead of NodeLabels and
	// NodeTaints, so that `kubectl label` and `kubectl taint` count; fresh
	// asks the API server rather than a cache. Standalone agents leave it
	// nil.
	Node   func(ctx context.Context, fresh bool) (*v1.Node, error)
	Events EventRecorder
	// ParallelImagePulls lets pulls run at once (serializeImagePulls=false),
	// at most MaxParallelImagePulls of them when it is above 0.
	ParallelImagePulls    bool
	MaxParallelImagePulls int
	// RegistryPullQPS limits pulls per second (0: no limit), with a burst
	// of RegistryBurst.
	RegistryPullQPS float32
	RegistryBurst   int
	Logger          *slog.Logger
	// ResyncPeriod is how often each pod is synced without a trigger
	// (the kubelet's syncFrequency).
	ResyncPeriod time.Duration
	// RetryPeriod is the delay after a failed runtime call.
	RetryPeriod time.Duration
	// HousekeepingPeriod is how often runtime pods unknown to the agent
	// are looked for and removed.
	HousekeepingPeriod time.Duration
	// ContainerGC is the container GC policy (nil: the kubelet's
	// DefaultGCPolicy) and ContainerGCPeriod how often it runs (0: the
	// kubelet's ContainerGCPeriod, a minute).
	ContainerGC       *GCPolicy
	ContainerGCPeriod time.Duration

	// Volumes sets up and tears down pod volumes (nil: pods with volumes
	// fail to start); Objects reads the config maps and secrets env and
	// volumes refer to (nil: standalone).
	Volumes VolumeManager
	Objects volume.Getter
	// References, when set, is told which pods run here (the config map
	// and secret managers behind Objects).
	References ObjectReferences
	// Services lists the services for the containers' service environment
	// variables (nil: standalone, none).
	Services ServiceLister
	// RuntimeClasses resolves pods' runtimeClassName to the CRI runtime
	// handler of their sandbox (nil: standalone, where a pod naming a
	// class fails to get a sandbox).
	RuntimeClasses RuntimeClassGetter

	// SourcesReady, when set, reports whether every pod source has been
	// heard from; until then runtime pods the agent does not know are left
	// alone (they may belong to a source not heard from yet).
	SourcesReady func() bool
	// OnStatus, when set, receives each pod's status whenever it changes
	// (the status manager sends it to the API server).
	OnStatus func(pod *v1.Pod, status v1.PodStatus)
	// OnTerminated, when set, is called once a pod that left the node (or
	// was deleted: deletionTimestamp set) is stopped and cleaned up, so the
	// API side can confirm the deletion.
	OnTerminated func(pod *v1.Pod)

	// Metrics and ProbeMetrics, when set, receive the workers' and the
	// probes' measurements.
	Metrics      Observer
	ProbeMetrics probe.Observer
	// CgroupMetrics, when set, receives the pod and QoS cgroup writes'
	// durations by operation (kubelet_cgroup_manager_duration_seconds).
	CgroupMetrics func(operation string, d time.Duration)
	// Tracer, when set, keeps each pod's start steps (pkg/podtrace).
	Tracer Tracer

	// AllowedUnsafeSysctls are the sysctls and prefixes ending in '*' pods
	// may set beyond the safe set (KubeletConfiguration allowedUnsafeSysctls);
	// admission rejects pods asking for others (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// Network, when set, says why pods that are not hostNetwork may not
	// join the pod network yet (nil once they may): the kubelet's
	// runtimeState.networkErrors. Such pods wait, with a NetworkNotReady
	// event; call Manager.NetworkChanged when the answer changes. Nil: the
	// network is always ready.
	Network func() error
	// AppArmorEnabled, when set, replaces the host check (securityfs and
	// the apparmor module parameter, read once in New) of whether AppArmor
	// can be enforced; pods that ask for a profile are rejected when not.
	AppArmorEnabled func() bool
	// UserNamespaces allocates the user namespaces of pods with
	// hostUsers: false (nil: such pods get no sandbox).
	UserNamespaces UserNamespaces
	// Pressure is the node's pressure conditions, which node admission
	// checks first (the kubelet's eviction admit handler; nil: none).
	Pressure func() []v1.NodeConditionType
}

// The kubelet's container restart back-off: 10 s doubling to 5 min, reset
// after 10 min without a crash.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second

	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 2*time.Minute + 2*time.Second
)

// Manager keeps one worker per pod and routes updates to them.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	events  EventRecorder
	backoff *flowcontrol.Backoff
	puller  *puller
	// mounts backs off volume set-up retries per pod, as the kubelet's
	// volume manager does (0.5 s doubling to about 2 min).
	mounts *flowcontrol.Backoff
	probes *probe.Manager // Run's, for its workers
	hooks  *lifecycle.Runner
	now    func() time.Time
	// sysctls are the sysctls admission lets pods set.
	sysctls *sysctl.Allowlist
	// cgroups creates the pod cgroups (nil: the runtime picks cgroups).
	cgroups *podcgroup.Manager

	// gcMu keeps one container GC run at a time (the periodic one and
	// the eviction manager's).
	gcMu sync.Mutex

	mu      sync.Mutex
	desired map[types.UID]*v1.Pod
	workers map[types.UID]*worker
	// finished holds deleted pods already stopped and cleaned up, so that
	// they are not stopped again while the API still lists them.
	finished map[types.UID]bool
	// rejected holds the status of pods that failed admission while they
	// stay in the desired set: they get no worker.
	rejected map[types.UID]*v1.PodStatus
	seeded   bool
	ready    chan struct{}
	wg       sync.WaitGroup
	// appArmorErr is why the host cannot enforce AppArmor, nil if it can.
	appArmorErr error
	// features are the runtime's (CRI Status): admission's
	// supplementalGroupsPolicy check and the workers' user namespaces.
	features *featureCache
	// runtimeUIDs are the pods that may have sandboxes or containers in
	// the runtime: what the relist at start and housekeeping found, what
	// the PLEG reported, and every pod given a worker. Nil until a relist
	// succeeded.
	runtimeUIDs map[types.UID]bool
}

// New checks the configuration and builds a manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil || cfg.Images == nil || cfg.NodeName == "" {
		return nil, errors.New("podworker: Runtime, Images and NodeName are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Events == nil {
		cfg.Events = LogEvents{Log: cfg.Logger}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noTracer{}
	}
	cfg.NodeLabels = defaultNodeLabels(cfg.NodeName, cfg.NodeLabels)
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = time.Minute
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = 2 * time.Second
	}
	if cfg.HousekeepingPeriod == 0 {
		cfg.HousekeepingPeriod = 10 * time.Second
	}
	if cfg.ContainerGC == nil {
		p := DefaultGCPolicy()
		cfg.ContainerGC = &p
	}
	if cfg.ContainerGCPeriod == 0 {
		cfg.ContainerGCPeriod = DefaultContainerGCPeriod
	}
	sysctls, err := newSysctlAllowlist(cfg)
	if err != nil {
		return nil, err
	}
	keys, err := loadKeyring(defaultKeyringPaths(cfg.RootDir)...)
	if err != nil {
		cfg.Logger.Warn("registry credentials ignored", "err", err)
	}
	records, err := openPullRecords(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger,
		events:   cfg.Events,
		backoff:  flowcontrol.NewBackOff(backoffInitial, backoffMax),
		mounts:   flowcontrol.NewBackOff(mountRetryInitial, mountRetryMax),
		now:      time.Now,
		sysctls:  sysctls,
		desired:  map[types.UID]*v1.Pod{},
		workers:  map[types.UID]*worker{},
		finished: map[types.UID]bool{},
		rejected: map[types.UID]*v1.PodStatus{},
		ready:    make(chan struct{}),
	}
	m.appArmorErr = appArmorHostError(cfg.AppArmorEnabled)
	m.cgroups = newPodCgroups(cfg)
	m.features = &featureCache{rt: cfg.Runtime}
	m.hooks = &lifecycle.Runner{Exec: execer(cfg.Runtime)}
	m.puller = &puller{
		images:  cfg.Images,
		backoff: flowcontrol.NewBackOff(backoffInitial, backoffMax),
		keyring: keys,
		records: records,
		events:  cfg.Events,
		metrics: cfg.Metrics,
		tracer:  cfg.Tracer,
	}
	switch {
	case !cfg.ParallelImagePulls:
		m.puller.slots = make(chan struct{}, 1)
	case cfg.MaxParallelImagePulls > 0:
		m.puller.slots = make(chan struct{}, cfg.MaxParallelImagePulls)
	}
	if cfg.RegistryPullQPS > 0 {
		m.puller.limiter = flowcontrol.NewTokenBucketRateLimiter(cfg.RegistryPullQPS, max(cfg.RegistryBurst, 1))
	}
	return m, nil
}

// node is the node's facts the CRI translation combines with each pod.
func (m *Manager) node() criconfig.Node {
	return criconfig.Node{
		Name: m.cfg.NodeName, IP: m.cfg.NodeIP, Allocatable: m.cfg.Allocatable,
		DNS: m.cfg.DNS, PodLogsDir: m.cfg.PodLogsDir, CgroupRoot: m.cfg.CgroupRoot, FlatCgroups: m.cfg.FlatCgroups,
		SeccompProfileRoot: filepath.Join(m.cfg.RootDir, "seccomp"), SeccompDefault: m.cfg.SeccompDefault,
	}
}

// Ready is closed once the first pod set has been synced once.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Run dispatches pod sets and runtime events to workers until ctx ends.
// Pods keep running when it returns, as they do when the kubelet stops.
func (m *Manager) Run(ctx context.Context, pods <-chan []*v1.Pod, events <-chan runtime.PodEvent) error {
	house := time.NewTicker(m.cfg.HousekeepingPeriod)
	defer house.Stop()
	// The probe workers live as long as Run: the end of ctx cancels their
	// probes in flight.
	m.probes = probe.NewManager(ctx, probe.Config{Exec: execer(m.cfg.Runtime), Events: m.cfg.Events, OnChange: m.wakeWorker, Logger: m.cfg.Logger, Metrics: m.cfg.ProbeMetrics})
	defer m.probes.Close() // after the workers
	defer m.wg.Wait()
	m.relistAtStart(ctx)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.runContainerGC(ctx)
	}()
	if m.cgroups != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.cgroups.RunQOS(ctx)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case set := <-pods:
			first := m.setPods(ctx, set)
			if first {
				m.housekeeping(ctx)
			}
		case ev := <-events:
			m.noteRuntimeUID(ev.UID)
			m.mu.Lock()
			w := m.workers[ev.UID]
			m.mu.Unlock()
			if w != nil {
				w.wakeFor(ev)
			}
		case <-house.C:
			m.housekeeping(ctx)
		}
	}
}

// setPods makes the desired set the given one: new pods get a worker,
// changed pods are updated, missing pods terminate. It reports whether
// this was the first set.
func (m *Manager) setPods(ctx context.Context, pods []*v1.Pod) bool {
	// Callbacks for rejected pods run once the lock is released.
	var notify []func()
	defer func() {
		for _, f := range notify {
			f()
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	desired := make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		if old := m.desired[p.UID]; sameAPIObject(old, p) {
			desired[p.UID] = old
			continue
		}
		desired[p.UID] = p.DeepCopy()
	}
	for uid, w := range m.workers {
		if _, ok := desired[uid]; !ok {
			w.terminate()
		}
	}
	m.desired = desired
	for uid := range m.finished {
		if _, ok := desired[uid]; !ok {
			delete(m.finished, uid)
		}
	}
	for uid := range m.rejected {
		if _, ok := desired[uid]; !ok {
			delete(m.rejected, uid)
		}
	}
	var started []*worker
	var fresh []*v1.Pod
	for uid, p := range desired {
		w, ok := m.workers[uid]
		switch {
		case ok:
			w.update(p)
		case m.finished[uid]:
			continue
		case m.rejected[uid] != nil:
			if p.DeletionTimestamp != nil && m.cfg.OnTerminated != nil {
				m.finished[uid] = true // nothing to stop: confirm the deletion
				notify = append(notify, func() { m.cfg.OnTerminated(p) })
			}
			continue
		default:
			fresh = append(fresh, p)
			continue
		}
		if p.DeletionTimestamp != nil {
			w.terminate() // deleted through the API: stop within its grace period
		}
	}
	sortByCreation(fresh)
	var node *NodeInfo // read once, for the first pod that needs it
	for _, p := range fresh {
		seen := m.now()
		m.cfg.Tracer.Record(p, podtrace.Step{Name: podtrace.StepSeen, Start: seen, End: seen,
			Detail: "source " + p.Annotations[podutil.ConfigSourceAnnotation]})
		if needsAdmission(p) {
			r := m.admitUnderPressure(p)
			if r.Admit {
				r = checkSysctls(p, m.sysctls) // upstream's sysctl handler runs before the predicates
			}
			if r.Admit {
				if node == nil {
					info := m.nodeInfo(ctx)
					node = &info
				}
				var plan preemptionPlan
				if r, plan = m.admitLocked(ctx, p, *node); r.Admit && len(plan.Victims) > 0 {
					m.preemptLocked(ctx, p, plan) // releases the lock while the victims stop
				}
			}
			if r.Admit {
				r = checkAppArmor(p, m.appArmorErr)
			}
			traceAdmission(m.cfg.Tracer, seen, m.now(), p, r)
			if !r.Admit {
				m.rejectLocked(p, r, &notify)
				continue
			}
		}
		w := m.startWorkerLocked(ctx, p, false)
		started = append(started, w)
		if p.DeletionTimestamp != nil {
			w.terminate()
		}
	}
	if m.seeded {
		return false
	}
	m.seeded = true
	go func() {
		for _, w := range started {
			select {
			case <-w.synced:
			case <-ctx.Done():
				return
			}
		}
		close(m.ready)
	}()
	return true
}

// sameAPIObject: cur is the API object old was copied from, unchanged
// (the same resourceVersion). The API source sends every pod of the node
// on each change; in a burst of 100 pods, copying and comparing the 99
// others again on each of hundreds of sets cost more agent CPU than
// starting them. Static pods have no resourceVersion and are compared.
func sameAPIObject(old, cur *v1.Pod) bool {
	return old != nil && old.UID == cur.UID && old.ResourceVersion != "" && old.ResourceVersion == cur.ResourceVersion
}

// needsAdmission: as upstream, pods being deleted and pods the API already
// shows finished skip admission (their worker never starts them). Static
// pods are admitted as the others, against the node as the agent knows it
// locally when the API server is away (nodeInfo), so that they start
// without it.
func needsAdmission(pod *v1.Pod) bool {
	return pod.DeletionTimestamp == nil && !finishedInAPI(pod)
}

func (m *Manager) startWorkerLocked(ctx context.Context, pod *v1.Pod, orphan bool) *worker {
	w := newWorker(m.workerDeps(), pod)
	w.orphan = orphan
	w.fresh = !orphan && neverInRuntime(m.runtimeUIDs, pod.UID)
	if m.runtimeUIDs != nil {
		m.runtimeUIDs[pod.UID] = true // from now on it may have runtime objects
	}
	m.workers[pod.UID] = w
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run(ctx)
	}()
	return w
}

// forget drops a finished worker; if its pod came back meanwhile, a fresh
// worker starts it again.
func (m *Manager) forget(ctx context.Context, w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.uid] == w {
		delete(m.workers, w.uid)
		m.probes.RemovePod(w.uid)
		m.cfg.Metrics.PodForgotten(w.uid)
		m.cfg.Tracer.PodGone(w.uid)
	}
	p, ok := m.desired[w.uid]
	switch {
	case !ok || ctx.Err() != nil:
	case p.DeletionTimestamp != nil:
		m.finished[w.uid] = true
	default:
		m.startWorkerLocked(ctx, p, false) // came back while it was stopping
	}
}

func (m *Manager) wakeWorker(uid types.UID) {
	m.mu.Lock()
	w := m.workers[uid]
	m.mu.Unlock()
	if w != nil {
		w.wake()
	}
}

// housekeeping removes pods the runtime holds but the agent does not know
// (deleted while the agent was down, or left by a crash).
func (m *Manager) housekeeping(ctx context.Context) {
	m.backoff.GC()
	m.puller.backoff.GC()
	refs, err := runtime.ListPodRefs(ctx, m.cfg.Runtime)
	if err != nil {
		m.log.Warn("housekeeping: list runtime pods", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runtimeUIDs = runtimeUIDs(refs, m.workers)
	if !m.seeded || (m.cfg.SourcesReady != nil && !m.cfg.SourcesReady()) {
		return
	}
	m.cleanupVolumesLocked()
	m.cleanupUserNamespacesLocked(refs)
	for uid, ref := range refs {
		if _, known := m.workers[uid]; known {
			continue
		}
		m.log.Info("removing pod unknown to the agent", "pod", ref.Namespace+"/"+ref.Name, "podUID", uid)
		orphan := &v1.Pod{}
		orphan.UID, orphan.Name, orphan.Namespace = uid, ref.Name, ref.Namespace
		m.startWorkerLocked(ctx, orphan, true).terminate()
	}
}

// relistAtStart lists the runtime's pods before any worker starts, as the
// kubelet's first syncs wait for its PLEG's first relist (the pod cache's
// GetNewerThan): a pod found there is read from the runtime on its first
// sync (it ran before the agent restarted), any other starts from an
// empty status. When the list fails every first sync reads the runtime.
func (m *Manager) relistAtStart(ctx context.Context) {
	refs, err := runtime.ListPodRefs(ctx, m.cfg.Runtime)
	if err != nil {
		m.log.Warn("list runtime pods at start; each pod's first sync reads the runtime", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runtimeUIDs = runtimeUIDs(refs, m.workers)
}

// noteRuntimeUID records a pod the PLEG saw in the runtime.
func (m *Manager) noteRuntimeUID(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runtimeUIDs != nil {
		m.runtimeUIDs[uid] = true
	}
}

// runtimeUIDs are the pods that may have runtime objects: those listed,
// and those with a worker (which may be making them right now). A pod
// whose worker ended had its objects removed, so it drops out.
func runtimeUIDs(listed map[types.UID]runtime.PodRef, workers map[types.UID]*worker) map[types.UID]bool {
	out := make(map[types.UID]bool, len(listed)+len(workers))
	for uid := range listed {
		out[uid] = true
	}
	for uid := range workers {
		out[uid] = true
	}
	return out
}

// neverInRuntime: the runtime holds nothing of the pod, as far as a
// successful relist and the workers since tell (known nil: unknown).
func neverInRuntime(known map[types.UID]bool, uid types.UID) bool {
	return known != nil && !known[uid]
}

// Pods returns the desired pods with their latest status, sorted by
// namespace and name.
func (m *Manager) Pods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*v1.Pod, 0, len(m.desired))
	for uid, p := range m.desired {
		cp := p.DeepCopy()
		if st := m.rejected[uid]; st != nil {
			cp.Status = *st.DeepCopy()
		} else if w := m.workers[uid]; w != nil {
			if st := w.Status(); st != nil {
				cp.Status = *st.DeepCopy()
			}
		}
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// cleanupVolumesLocked removes the volumes of pods with neither a worker
// nor a place in the desired set (deleted while the agent was down).
func (m *Manager) cleanupVolumesLocked() {
	if m.cfg.Volumes == nil {
		return
	}
	keep := make(map[types.UID]bool, len(m.workers)+len(m.desired))
	for uid := range m.workers {
		keep[uid] = true
	}
	for uid := range m.desired {
		keep[uid] = true
	}
	if err := m.cfg.Volumes.CleanupOrphans(keep); err != nil {
		m.log.Warn("housekeeping: remove volumes of removed pods", "err", err)
	}
}
