package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent/nodeagent/pkg/crash"
	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Config configures Source; Client and NodeName are required.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	// ResyncPeriod is the informer's resync; 0 (the kubelet's reflector
	// default) resends only on changes: each pod worker resyncs by itself.
	ResyncPeriod time.Duration
	Logger       *slog.Logger
}

// Source watches the pods with spec.nodeName=<node>.
type Source struct {
	cfg      Config
	log      *slog.Logger
	informer cache.SharedIndexInformer
	factory  informers.SharedInformerFactory
	changed  chan struct{}
	// copies are the last snapshot's pods by UID, reused while the
	// informer holds the same resourceVersion: a burst of n pods sends n
	// snapshots of up to n pods, and copying the unchanged ones again
	// each time cost more agent CPU than anything else it did for them.
	// Only Run's goroutine uses it; the receivers do not change the pods
	// they get (the pod manager skips a pod whose version it has).
	copies map[types.UID]*v1.Pod
}

// New builds the informer; Run starts it.
func New(cfg Config) (*Source, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("apiclient: API source needs Client and NodeName")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sel := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	f := informers.NewSharedInformerFactoryWithOptions(cfg.Client, cfg.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	s := &Source{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "apisource"),
		informer: f.Core().V1().Pods().Informer(),
		factory:  f,
		changed:  make(chan struct{}, 1),
	}
	notify := func() {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	if _, err := s.informer.AddEventHandler(crash.EventHandler(s.log, "agent", cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})); err != nil {
		return nil, fmt.Errorf("apiclient: pod informer: %w", err)
	}
	return s, nil
}

// Run runs the informer and sends a full snapshot on out once it has
// synced and after every change (changes in a burst are coalesced).
func (s *Source) Run(ctx context.Context, out chan<- podsource.APIPods) error {
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return nil // ctx ended
	}
	s.log.Info("pod informer synced")
	for {
		select {
		case out <- s.snapshot():
		case <-ctx.Done():
			return nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// snapshot splits the cached pods into pods to run (annotated as API
// pods) and mirror pods, each sorted by namespace/name.
func (s *Source) snapshot() podsource.APIPods {
	var set podsource.APIPods
	copies := make(map[types.UID]*v1.Pod, len(s.copies))
	for _, obj := range s.informer.GetStore().List() {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			continue
		}
		p := s.copyOf(pod)
		copies[pod.UID] = p
		if _, mirror := pod.Annotations[podutil.ConfigMirrorAnnotation]; mirror {
			set.Mirrors = append(set.Mirrors, p)
		} else {
			set.Pods = append(set.Pods, p)
		}
	}
	s.copies = copies
	sortPods(set.Pods)
	sortPods(set.Mirrors)
	return set
}

// copyOf returns the snapshot's copy of the informer's pod: the previous
// one while its resourceVersion is the same, else a new copy (a pod to run
// annotated as an API pod).
func (s *Source) copyOf(pod *v1.Pod) *v1.Pod {
	if prev := s.copies[pod.UID]; prev != nil && pod.ResourceVersion != "" && prev.ResourceVersion == pod.ResourceVersion {
		return prev
	}
	p := pod.DeepCopy()
	if _, mirror := pod.Annotations[podutil.ConfigMirrorAnnotation]; mirror {
		return p
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[podutil.ConfigSourceAnnotation] = podutil.SourceAPI
	return p
}

func sortPods(pods []*v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}
