package apiclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// DefaultMirrorResync is how often mirror pods are checked without a
// change (a failed call is retried then).
const DefaultMirrorResync = 10 * time.Second

// MirrorConfig configures MirrorManager; Client and NodeName are required.
type MirrorConfig struct {
	Client   kubernetes.Interface
	NodeName string
	Resync   time.Duration
	Logger   *slog.Logger
}

// MirrorManager keeps one mirror pod in the API for every static pod, as
// the kubelet does: same name, spec and labels, annotation
// kubernetes.io/config.mirror = the static pod's config.hash, owned by
// the Node. A mirror pod deleted by a user is recreated; one whose static
// pod is gone or changed is deleted.
type MirrorManager struct {
	cfg  MirrorConfig
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	static  []*v1.Pod
	mirrors []*v1.Pod
	seeded  bool
	nodeUID types.UID
}

// NewMirrorManager checks cfg and applies the defaults.
func NewMirrorManager(cfg MirrorConfig) (*MirrorManager, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("apiclient: mirror manager needs Client and NodeName")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultMirrorResync
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &MirrorManager{cfg: cfg, log: cfg.Logger.With("component", "mirrorpods"), wake: make(chan struct{}, 1)}, nil
}

// Update takes the static pods and the mirror pods the API holds (the
// Merger's OnStatic); it does not block.
func (m *MirrorManager) Update(static, mirrors []*v1.Pod) {
	m.mu.Lock()
	m.static, m.mirrors, m.seeded = static, mirrors, true
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run reconciles on every update and every Resync until ctx ends.
func (m *MirrorManager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
		case <-t.C:
		}
		if err := m.reconcile(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("mirror pods", "err", err)
		}
	}
}

// reconcile creates missing mirror pods and deletes stale ones.
func (m *MirrorManager) reconcile(ctx context.Context) error {
	m.mu.Lock()
	static, mirrors, seeded := m.static, m.mirrors, m.seeded
	m.mu.Unlock()
	if !seeded {
		return nil
	}
	byName := make(map[string]*v1.Pod, len(mirrors))
	for _, mp := range mirrors {
		byName[mp.Namespace+"/"+mp.Name] = mp
	}
	var errs []error
	wanted := make(map[string]bool, len(static))
	for _, sp := range static {
		key := sp.Namespace + "/" + sp.Name
		wanted[key] = true
		mp := byName[key]
		if mp != nil && isMirrorOf(mp, sp) && mp.DeletionTimestamp == nil {
			continue
		}
		if mp != nil { // stale, or being deleted: delete for good, then recreate
			m.log.Info("replacing mirror pod", "pod", key)
			if err := deletePod(ctx, m.cfg.Client, mp.Namespace, mp.Name, mp.UID); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := m.create(ctx, sp); err != nil {
			errs = append(errs, err)
		}
	}
	for key, mp := range byName {
		if !wanted[key] {
			m.log.Info("deleting mirror pod of a removed static pod", "pod", key)
			errs = append(errs, deletePod(ctx, m.cfg.Client, mp.Namespace, mp.Name, mp.UID))
		}
	}
	return errors.Join(errs...)
}

func (m *MirrorManager) create(ctx context.Context, sp *v1.Pod) error {
	uid, err := m.getNodeUID(ctx)
	if err != nil {
		return err
	}
	mp := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        sp.Name,
			Namespace:   sp.Namespace,
			Labels:      sp.Labels,
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.SchemeGroupVersion.String(), Kind: "Node",
				Name: m.cfg.NodeName, UID: uid, Controller: new(true),
			}},
		},
		Spec: *sp.Spec.DeepCopy(),
	}
	for k, v := range sp.Annotations {
		mp.Annotations[k] = v
	}
	mp.Annotations[podutil.ConfigMirrorAnnotation] = sp.Annotations[podutil.ConfigHashAnnotation]
	_, err = m.cfg.Client.CoreV1().Pods(sp.Namespace).Create(ctx, mp, metav1.CreateOptions{})
	switch {
	case err == nil:
		m.log.Info("created mirror pod", "pod", sp.Namespace+"/"+sp.Name)
	case apierrors.IsAlreadyExists(err):
		return nil // the informer has not seen it yet, or a deletion is pending: next round
	default:
		return fmt.Errorf("create mirror pod %s/%s: %w", sp.Namespace, sp.Name, err)
	}
	return nil
}

func (m *MirrorManager) getNodeUID(ctx context.Context) (types.UID, error) {
	m.mu.Lock()
	uid := m.nodeUID
	m.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	node, err := m.cfg.Client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("mirror pod owner: %w", err)
	}
	m.mu.Lock()
	m.nodeUID = node.UID
	m.mu.Unlock()
	return node.UID, nil
}

// isMirrorOf tells whether mirror is the current mirror pod of static.
func isMirrorOf(mirror, static *v1.Pod) bool {
	hash, ok := mirror.Annotations[podutil.ConfigMirrorAnnotation]
	return ok && hash == static.Annotations[podutil.ConfigHashAnnotation] &&
		mirror.Annotations[podsource.ContentHashAnnotation] == static.Annotations[podsource.ContentHashAnnotation]
}
