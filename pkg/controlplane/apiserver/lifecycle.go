package apiserver

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/admission"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// The namespaces every cluster has.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

func storageListAll(filter func(runtime.Object) bool) storage.ListOptions {
	return storage.ListOptions{Filter: filter}
}

// afterCreate gives a new namespace its default service account (the
// service account controller's job upstream): the resource's AfterCreate.
func (s *Server) afterCreate(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	if res.AfterCreate != nil {
		res.AfterCreate(ctx, obj, s.hookStorage())
	}
}

func (s *Server) ensureServiceAccount(ctx context.Context, ns string) {
	s.createInternal(ctx, s.resources[saResource], registry.DefaultServiceAccount(ns))
}

// createInternal creates an object on the server's own behalf; an existing
// one is fine.
func (s *Server) createInternal(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	kind := resourceKey(res.GVK.Group, res.GVK.Version, res.Plural)
	m, _ := meta.Accessor(obj)
	m.SetUID(newUID())
	m.SetCreationTimestamp(metav1.Now())
	if res.Default != nil {
		res.Default(obj)
	}
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	if _, err := s.stores[res].Create(ctx, obj, false); err != nil && !apierrors.IsAlreadyExists(err) {
		s.cfg.Logger.Error("create built-in object", "kind", kind, "name", m.GetName(), "err", err)
	}
}

// bootstrap creates the system namespaces and their service accounts.
func (s *Server) bootstrap(ctx context.Context) {
	for _, name := range systemNamespaces {
		s.createInternal(ctx, s.resources[nsResource], &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		s.ensureServiceAccount(ctx, name)
	}
	s.createInternal(ctx, s.resources[servicesResource], kubernetesService())
}

// deleteObject deletes as upstream does: a bound pod with a grace period
// is only marked (its node deletes it with grace 0 once stopped); an
// object with finalizers is marked and goes when they are removed; a
// namespace turns Terminating and is emptied first.
func (s *Server) deleteObject(ctx context.Context, h *resourceHandler, ns, name string, opts *metav1.DeleteOptions) (runtime.Object, error) {
	st := h.st
	dry := len(opts.DryRun) > 0
	existing, err := st.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	// Upstream's delete admission sees no object, only the stored one,
	// before the preconditions are checked.
	del := &admission.Attributes{Operation: admissionv1.Delete, Resource: h.res, Namespace: ns, Name: name, OldObject: existing}
	if err := s.admitMutating(ctx, del); err != nil {
		return nil, err
	}
	if err := checkPreconditions(h.res, existing, opts.Preconditions); err != nil {
		return nil, err
	}
	grace := gracePeriod(h.res, existing, opts)
	m, _ := meta.Accessor(existing)
	propagation := propagationFinalizer(opts)
	if grace > 0 || len(m.GetFinalizers()) > 0 || propagation != "" || h.res.FinalizeDelete != nil {
		marked, err := st.Update(ctx, ns, name, func(cur runtime.Object) (runtime.Object, error) {
			if propagation != "" {
				cm, _ := meta.Accessor(cur)
				cm.SetFinalizers(addFinalizer(cm.GetFinalizers(), propagation))
			}
			return markDeleted(h.res, cur, grace), nil
		}, dry)
		if err != nil {
			return nil, err
		}
		if h.res.FinalizeDelete != nil && !dry {
			h.res.FinalizeDelete(marked, s.hookStorage())
		}
		if done, err := s.finishDeletion(ctx, h, marked, dry); err != nil || done != nil {
			return done, err
		}
		return marked, nil
	}
	return st.Delete(ctx, ns, name, func(cur runtime.Object) error {
		return checkPreconditions(h.res, cur, opts.Preconditions)
	}, dry)
}

func checkPreconditions(res *registry.Resource, obj runtime.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	m, _ := meta.Accessor(obj)
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(groupResource(res), m.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(groupResource(res), m.GetName(),
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// gracePeriod is the deletion's grace, the resource's GracePeriod: only
// bound, unfinished pods get one.
func gracePeriod(res *registry.Resource, obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	if res.GracePeriod == nil {
		return 0
	}
	return res.GracePeriod(obj, opts)
}

func markDeleted(res *registry.Resource, obj runtime.Object, grace int64) runtime.Object {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || (m.GetDeletionGracePeriodSeconds() != nil && grace < *m.GetDeletionGracePeriodSeconds()) {
		t := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
		m.SetDeletionTimestamp(&t)
		m.SetDeletionGracePeriodSeconds(&grace)
	}
	if res.PrepareForDelete != nil {
		res.PrepareForDelete(obj) // namespaces turn Terminating
	}
	return obj
}

// finishDeletion removes an object that is marked for deletion and has
// nothing left to wait for: no finalizers and no grace period. It returns
// the deleted object, or nil when the object stays.
func (s *Server) finishDeletion(ctx context.Context, h *resourceHandler, obj runtime.Object, dry bool) (runtime.Object, error) {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 || h.res.FinalizeDelete != nil {
		return nil, nil
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return nil, nil
	}
	deleted, err := h.st.Delete(ctx, m.GetNamespace(), m.GetName(), nil, dry)
	if apierrors.IsNotFound(err) {
		return obj, nil
	}
	return deleted, err
}

// propagationFinalizer turns a deletion's propagationPolicy into the
// finalizer the garbage collector acts on, as upstream's API server does:
// Foreground deletes dependents first, Orphan leaves them ownerless.
// Background (the default) needs none: the collector removes dependents
// of owners that are gone.
func propagationFinalizer(opts *metav1.DeleteOptions) string {
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationForeground:
			return metav1.FinalizerDeleteDependents
		case metav1.DeletePropagationOrphan:
			return metav1.FinalizerOrphanDependents
		}
		return ""
	}
	if opts.OrphanDependents != nil && *opts.OrphanDependents {
		return metav1.FinalizerOrphanDependents
	}
	return ""
}

func addFinalizer(list []string, f string) []string {
	for _, x := range list {
		if x == f {
			return list
		}
	}
	return append(list, f)
}
