package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// Defaults, as upstream's (podInitialBackoff, podMaxBackoff).
const (
	DefaultSchedulerName      = v1.DefaultSchedulerName
	DefaultInitialBackoff     = time.Second
	DefaultMaxBackoff         = 10 * time.Second
	DefaultUnschedulableRetry = 60 * time.Second

	// assumedTTL bounds how long a bound pod counts on its node before
	// the informer reports the binding.
	assumedTTL = 30 * time.Second
	// apiTimeout bounds each API call of a scheduling cycle.
	apiTimeout = 30 * time.Second
	// nonTerminalPods is upstream's field selector for the pod informer.
	nonTerminalPods = "status.phase!=" + string(v1.PodSucceeded) + ",status.phase!=" + string(v1.PodFailed)
)

// Config configures New. Zero values take the defaults above.
type Config struct {
	Client        kubernetes.Interface // required
	SchedulerName string               // pods whose spec.schedulerName is this
	Logger        *slog.Logger

	// InitialBackoff and MaxBackoff bound the per-pod retry backoff.
	InitialBackoff, MaxBackoff time.Duration
	// UnschedulableRetry is how often unschedulable pods are retried when
	// no node or pod changes.
	UnschedulableRetry time.Duration
	// Rand breaks ties between equally scored nodes (tests seed it).
	Rand *rand.Rand
	// Metrics, when set, gets the scheduler_* metrics (the API server's
	// registry in the all-in-one server); nil keeps them unexported.
	Metrics metrics.KubeRegistry
	// Instruments, when set, are the metrics to count in instead (already
	// registered): schedulers built one after another (a leader's terms)
	// count in the same series. Metrics is then not used.
	Instruments *Instruments
}

// Scheduler binds pending pods to nodes; see the package documentation.
type Scheduler struct {
	cfg        Config
	log        *slog.Logger
	client     kubernetes.Interface
	factory    informers.SharedInformerFactory
	podInf     cache.SharedIndexInformer
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	vols       *volumeLookup
	limiter    workqueue.TypedRateLimiter[string]
	queue      workqueue.TypedRateLimitingInterface[string]
	recorder   events.EventRecorder
	runOnce    sync.Once
	mu         sync.Mutex
	parked     map[string]time.Time // unschedulable pod key → end of its backoff
	moves      uint64               // cluster changes seen, to catch those during a cycle
	assumed    map[types.UID]assumedPod
	binds      sync.WaitGroup // bindings in flight
	randSource *rand.Rand     // used by the single worker only
	metrics    *Instruments
}

type assumedPod struct {
	pod     *v1.Pod
	expires time.Time
}

// New checks cfg and builds a Scheduler; Run starts it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, errors.New("scheduler: Client is required")
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.InitialBackoff)
	}
	if cfg.UnschedulableRetry <= 0 {
		cfg.UnschedulableRetry = DefaultUnschedulableRetry
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	s := &Scheduler{
		cfg:        cfg,
		log:        cfg.Logger,
		client:     cfg.Client,
		factory:    informers.NewSharedInformerFactory(cfg.Client, 0),
		limiter:    workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.InitialBackoff, cfg.MaxBackoff),
		parked:     map[string]time.Time{},
		assumed:    map[types.UID]assumedPod{},
		randSource: cfg.Rand,
		metrics:    cfg.Instruments,
	}
	if s.metrics == nil {
		s.metrics = NewInstruments(cfg.Metrics)
	}
	s.podInf = s.factory.InformerFor(&v1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(c, v1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.FieldSelector = nonTerminalPods })
	})
	s.pods = corelisters.NewPodLister(s.podInf.GetIndexer())
	s.nodes = s.factory.Core().V1().Nodes().Lister()
	s.vols = s.newVolumeLookup()
	return s, nil
}

// Run schedules until ctx ends, then stops its informers, queue and event
// recorder and returns nil. It may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	err := errors.New("scheduler: Run called twice")
	s.runOnce.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Scheduler) run(ctx context.Context) error {
	// As kube-scheduler: events.k8s.io/v1 events (core/v1 where the
	// server lacks that API, found by discovery under ctx), reported by
	// the scheduler's name. The events.k8s.io sink stops only when run
	// returns: events of bindings finishing after ctx ends are still sent.
	broadcaster := events.NewEventBroadcasterAdapterWithContext(ctx, s.client)
	stopEvents := make(chan struct{})
	defer broadcaster.Shutdown()
	defer close(stopEvents)
	broadcaster.StartRecordingToSink(stopEvents)
	s.recorder = broadcaster.NewRecorder(s.cfg.SchedulerName)

	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(s.limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: ""})
	defer s.queue.ShutDown()

	if _, err := s.podInf.AddEventHandler(crash.EventHandler(s.log, panicComponent, cache.ResourceEventHandlerFuncs{
		AddFunc: s.onPodAdd, UpdateFunc: s.onPodUpdate, DeleteFunc: s.onPodDelete,
	})); err != nil {
		return err
	}
	if _, err := s.factory.Core().V1().Nodes().Informer().AddEventHandler(crash.EventHandler(s.log, panicComponent, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.moveAll("node added") },
		UpdateFunc: s.onNodeUpdate,
	})); err != nil {
		return err
	}
	if err := s.watchVolumes(); err != nil {
		return err
	}
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown() // after ctx ends: waits for the informers
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return errors.New("scheduler: cache sync failed for " + typ.String())
		}
	}
	s.log.Info("scheduler started", "schedulerName", s.cfg.SchedulerName)

	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.UnschedulableRetry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.moveAll("periodic retry")
			}
		}
	})
	wg.Go(func() {
		<-ctx.Done()
		s.queue.ShutDown()
	})
	for s.processNext(ctx) {
	}
	wg.Wait()
	s.binds.Wait()
	s.log.Info("scheduler stopped")
	return nil
}

// responsible reports whether pod waits for this scheduler.
func (s *Scheduler) responsible(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.Spec.SchedulerName == s.cfg.SchedulerName &&
		len(pod.Spec.SchedulingGates) == 0 && pod.DeletionTimestamp == nil
}

func (s *Scheduler) onPodAdd(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.forgetAssumed(pod.UID)
		s.moveAll("pod added")
		return
	}
	if s.responsible(pod) {
		s.activate(key(pod))
	}
}

func (s *Scheduler) onPodUpdate(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*v1.Pod)
	pod, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		s.forgetAssumed(pod.UID)
		if oldPod.Spec.NodeName == "" || !equality.Semantic.DeepEqual(oldPod.Labels, pod.Labels) {
			s.moveAll("pod updated")
		}
	case s.responsible(pod) && (!s.responsible(oldPod) || schedulingInputChanged(oldPod, pod)):
		s.activate(key(pod))
	}
}

// schedulingInputChanged ignores status-only updates (such as our own
// PodScheduled condition), as upstream's isPodUpdated does.
func schedulingInputChanged(a, b *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

func (s *Scheduler) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.forgetAssumed(pod.UID)
		s.moveAll("pod deleted")
		return
	}
	s.mu.Lock()
	delete(s.parked, key(pod))
	s.mu.Unlock()
	s.forgetAssumed(pod.UID) // bound, then deleted before we saw the binding
	s.queue.Forget(key(pod))
}

func (s *Scheduler) onNodeUpdate(oldObj, newObj any) {
	a, ok1 := oldObj.(*v1.Node)
	b, ok2 := newObj.(*v1.Node)
	if ok1 && ok2 && nodeSchedulingChanged(a, b) {
		s.moveAll("node updated")
	}
}

// nodeSchedulingChanged ignores heartbeats: only what filters read counts.
func nodeSchedulingChanged(a, b *v1.Node) bool {
	return a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		readyStatus(a) != readyStatus(b)
}

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

// activate queues a pod, after what is left of its backoff if parked.
func (s *Scheduler) activate(k string) {
	s.mu.Lock()
	retryAt, parked := s.parked[k]
	delete(s.parked, k)
	s.mu.Unlock()
	if parked {
		s.queue.AddAfter(k, time.Until(retryAt))
		return
	}
	s.queue.Add(k)
}

// moveAll queues every unschedulable pod, each after its backoff.
func (s *Scheduler) moveAll(why string) {
	s.mu.Lock()
	s.moves++
	parked := s.parked
	s.parked = map[string]time.Time{}
	s.mu.Unlock()
	if len(parked) > 0 {
		s.log.Debug("retrying unschedulable pods", "count", len(parked), "event", why)
	}
	for k, retryAt := range parked {
		s.queue.AddAfter(k, time.Until(retryAt))
	}
}

// park keeps an unschedulable pod until a change; if one came during
// its cycle (moves advanced), it is retried after the backoff instead.
func (s *Scheduler) park(k string, movesAtStart uint64) {
	backoff := s.limiter.When(k)
	s.mu.Lock()
	changed := s.moves != movesAtStart
	if !changed {
		s.parked[k] = time.Now().Add(backoff)
	}
	s.mu.Unlock()
	if changed {
		s.queue.AddAfter(k, backoff)
	}
}

func (s *Scheduler) assume(pod *v1.Pod, node string) {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	s.mu.Lock()
	s.assumed[p.UID] = assumedPod{pod: p, expires: time.Now().Add(assumedTTL)}
	s.mu.Unlock()
}

// isAssumed: the pod's binding is in flight (or done and not seen yet).
func (s *Scheduler) isAssumed(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.assumed[uid]
	return ok && time.Now().Before(a.expires)
}

func (s *Scheduler) forgetAssumed(uid types.UID) {
	s.mu.Lock()
	delete(s.assumed, uid)
	s.mu.Unlock()
}

func key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
