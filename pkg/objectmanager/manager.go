package objectmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/nodeagent/nodeagent/pkg/podrefs"
)

// Strategy is a configMapAndSecretChangeDetectionStrategy value.
type Strategy string

// The kubelet's ResourceChangeDetectionStrategy values.
const (
	Watch Strategy = "Watch"
	Cache Strategy = "Cache"
	Get   Strategy = "Get"
)

// requestTimeout bounds each API call of a Get or Cache read.
const requestTimeout = 10 * time.Second

// Config builds a Manager; Client is required.
type Config struct {
	Client kubernetes.Interface
	// Strategy is how objects are kept ("": Watch).
	Strategy Strategy
	// ResyncPeriod is the pod workers' sync period (syncFrequency): a
	// watch not read for five of them (at least a minute) is stopped
	// until it is read again, as volumes are refreshed once per period
	// and only env-only references go unread (Watch).
	ResyncPeriod time.Duration
	// TTL, when set, overrides the default TTL of a minute (Cache): the
	// kubelet reads the node's node.alpha.kubernetes.io/ttl annotation,
	// see TTLFromNode.
	TTL func() (time.Duration, bool)
	// Clock is the idle watches' and the TTL's clock (nil: real time).
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Manager keeps the config maps and secrets the registered pods refer to.
type Manager struct {
	configMaps, secrets *objects
	watches             []*watchStore // Watch: what Run recycles and stops
	clock               clock.WithTicker
}

// New builds a manager for cfg's strategy.
func New(cfg Config) (*Manager, error) {
	if cfg.Client == nil {
		return nil, errors.New("objectmanager: Client is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{clock: cfg.Clock}
	kinds := [2]kind{configMapKind(cfg.Client), secretKind(cfg.Client)}
	var stores [2]store
	for i, k := range kinds {
		switch cfg.Strategy {
		case Watch, "":
			w := newWatchStore(k, cfg.Clock, cfg.ResyncPeriod, cfg.Logger)
			m.watches = append(m.watches, w)
			stores[i] = w
		case Cache:
			stores[i] = newTTLStore(k, cfg.Clock, cfg.TTL)
		case Get:
			stores[i] = getStore{k}
		default:
			// The kubelet's NewMainKubelet refuses it so.
			return nil, fmt.Errorf("unknown configmap and secret manager mode: %v", cfg.Strategy)
		}
	}
	m.configMaps = newObjects(stores[0], podrefs.ConfigMapNames)
	m.secrets = newObjects(stores[1], podrefs.SecretNames)
	return m, nil
}

// Run stops the watches nobody read for a while, every minute as the
// kubelet does, and every watch once ctx ends (then returns nil, once
// they have stopped).
func (m *Manager) Run(ctx context.Context) error {
	if len(m.watches) == 0 {
		<-ctx.Done()
		return nil
	}
	t := m.clock.NewTicker(recycleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, w := range m.watches {
				w.shutdown()
			}
			return nil
		case <-t.C():
			for _, w := range m.watches {
				w.recycleIdle()
			}
		}
	}
}

// RegisterPod records the config maps and secrets the pod refers to now;
// it does not block on the API (first reads wait for the watches).
func (m *Manager) RegisterPod(pod *v1.Pod) {
	m.configMaps.register(pod)
	m.secrets.register(pod)
}

// UnregisterPod drops the pod's references; objects no other pod refers
// to are forgotten (their watches stop).
func (m *Manager) UnregisterPod(pod *v1.Pod) {
	m.configMaps.unregister(pod)
	m.secrets.unregister(pod)
}

// GetConfigMap returns the config map; a missing one is a NotFound error.
func (m *Manager) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := m.configMaps.store.get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("unexpected object type: %v", obj)
	}
	return cm, nil
}

// GetSecret returns the secret; a missing one is a NotFound error.
func (m *Manager) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := m.secrets.store.get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*v1.Secret)
	if !ok {
		return nil, fmt.Errorf("unexpected object type: %v", obj)
	}
	return s, nil
}

// kind is what the stores need of one resource.
type kind struct {
	// resource is upstream's singular group resource ("configmap"), which
	// its cache errors and NotFound name.
	resource  schema.GroupResource
	client    any // for the reflector's watch-list semantics
	get       func(ctx context.Context, ns, name string, opts metav1.GetOptions) (runtime.Object, error)
	list      func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error)
	watch     func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error)
	newObject func() runtime.Object
	immutable func(runtime.Object) bool
}

func configMapKind(c kubernetes.Interface) kind {
	return kind{
		resource: schema.GroupResource{Resource: "configmap"},
		client:   c,
		get: func(ctx context.Context, ns, name string, opts metav1.GetOptions) (runtime.Object, error) {
			return c.CoreV1().ConfigMaps(ns).Get(ctx, name, opts)
		},
		list: func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().ConfigMaps(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
		},
		newObject: func() runtime.Object { return &v1.ConfigMap{} },
		immutable: func(o runtime.Object) bool {
			cm, ok := o.(*v1.ConfigMap)
			return ok && cm.Immutable != nil && *cm.Immutable
		},
	}
}

func secretKind(c kubernetes.Interface) kind {
	return kind{
		resource: schema.GroupResource{Resource: "secret"},
		client:   c,
		get: func(ctx context.Context, ns, name string, opts metav1.GetOptions) (runtime.Object, error) {
			return c.CoreV1().Secrets(ns).Get(ctx, name, opts)
		},
		list: func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Secrets(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Secrets(ns).Watch(ctx, opts)
		},
		newObject: func() runtime.Object { return &v1.Secret{} },
		immutable: func(o runtime.Object) bool {
			s, ok := o.(*v1.Secret)
			return ok && s.Immutable != nil && *s.Immutable
		},
	}
}

// getStore is the Get strategy: a GET per read, nothing kept.
type getStore struct{ kind kind }

func (getStore) addReference(string, string, podKey)    {}
func (getStore) deleteReference(string, string, podKey) {}

func (s getStore) get(ctx context.Context, ns, name string) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return s.kind.get(ctx, ns, name, metav1.GetOptions{})
}

// notRegistered is upstream's error for a read of an object no registered
// pod refers to.
func notRegistered(ns, name string) error {
	return fmt.Errorf("object %q/%q not registered", ns, name)
}
