package rootcacert

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// Upstream's names and words.
const (
	// ConfigMapName is the map in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey holds the CA bundle (PEM).
	DataKey = "ca.crt"
	// DescriptionAnnotation tells users what the map is for.
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Publisher keeps the kube-root-ca.crt map in every namespace.
type Publisher struct {
	client     kubernetes.Interface
	rootCA     string
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string] // namespace names
	log        *slog.Logger
}

// New registers the publisher's informers with factory; start the factory
// after New and before Run. rootCA is the PEM bundle to publish.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rootCA []byte, log *slog.Logger) *Publisher {
	cmInf := factory.Core().V1().ConfigMaps()
	nsInf := factory.Core().V1().Namespaces()
	p := &Publisher{
		client:     client,
		rootCA:     string(rootCA),
		configMaps: cmInf.Lister(),
		synced:     []cache.InformerSynced{cmInf.Informer().HasSynced, nsInf.Informer().HasSynced},
		queue:      ctrlutil.NewQueue[string]("root_ca_cert_publisher"),
		log:        log,
	}
	_, _ = cmInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) { p.configMapChanged(cur) },
		DeleteFunc: p.configMapChanged,
	}))
	_, _ = nsInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    p.namespaceChanged,
		UpdateFunc: func(_, cur any) { p.namespaceChanged(cur) },
	}))
	return p
}

// Run syncs namespaces with the given number of workers until ctx ends.
func (p *Publisher) Run(ctx context.Context, workers int) error {
	p.log.Info("starting root CA cert publisher")
	return ctrlutil.RunWorkers(ctx, p.log, p.queue, workers, p.sync, p.synced...)
}

// configMapChanged: a changed or deleted kube-root-ca.crt is put back.
func (p *Publisher) configMapChanged(obj any) {
	if cm, ok := ctrlutil.Unwrap(obj).(*v1.ConfigMap); ok && cm.Name == ConfigMapName {
		p.queue.Add(cm.Namespace)
	}
}

// namespaceChanged: new namespaces and, on resync, every active one. A
// terminating namespace is being emptied; a map created there would be
// refused anyway.
func (p *Publisher) namespaceChanged(obj any) {
	ns, ok := obj.(*v1.Namespace)
	if !ok || ns.Status.Phase == v1.NamespaceTerminating {
		return
	}
	p.queue.Add(ns.Name)
}

// sync makes the namespace's map hold the CA and the description.
func (p *Publisher) sync(ctx context.Context, ns string) error {
	cm, err := p.configMaps.ConfigMaps(ns).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		return p.create(ctx, ns)
	case err != nil:
		return fmt.Errorf("get config map %s/%s: %w", ns, ConfigMapName, err)
	}
	if maps.Equal(cm.Data, p.data()) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy() // the cache's copy is shared
	cm.Data = p.data()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update config map %s/%s: %w", ns, ConfigMapName, err)
	}
	return nil
}

func (p *Publisher) create(ctx context.Context, ns string) error {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ConfigMapName,
			Annotations: map[string]string{DescriptionAnnotation: Description},
		},
		Data: p.data(),
	}
	_, err := p.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	// A namespace that is gone or going away needs no map: no retry.
	if err == nil || apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
		return nil
	}
	return fmt.Errorf("create config map %s/%s: %w", ns, ConfigMapName, err)
}

func (p *Publisher) data() map[string]string {
	return map[string]string{DataKey: p.rootCA}
}
