package apiserver

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/podrefs"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// defaultServiceAccountName is the service account of pods that name none.
const defaultServiceAccountName = "default"

// admitServiceAccount is upstream's ServiceAccount admission on pod
// creation: a pod runs as "default" unless it names a service account,
// which must exist; it gets the projected API token volume unless it or
// its service account opts out, and the service account's image pull
// secrets when it has none of its own. Mirror pods are never changed (the
// node would see a spec other than its static pod's and delete it); they
// are only checked for references they may not make.
func (s *Server) admitServiceAccount(ctx context.Context, a *attributes) error {
	pod, ok := a.obj.(*v1.Pod)
	if !ok || a.op != admissionv1.Create || a.subresource != "" {
		return nil
	}
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return validateMirrorPodReferences(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccountName
	}
	sa, err := s.podServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admissionForbidden(a, "error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod, generateNameSuffix)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]v1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	if enforceMountableSecrets(sa) {
		if err := limitSecretReferences(sa, pod); err != nil {
			return admissionForbidden(a, "%w", err)
		}
	}
	return nil
}

// validateServiceAccountEphemeral is the plugin's check on adding
// ephemeral containers: the pod's service account must still exist, and
// the containers may only use its secrets when it enforces that.
func (s *Server) validateServiceAccountEphemeral(ctx context.Context, a *attributes) error {
	pod, ok := a.obj.(*v1.Pod)
	if !ok || a.op != admissionv1.Update || a.subresource != "ephemeralcontainers" {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return admissionForbidden(a, "no service account specified for pod %s/%s", pod.Namespace, pod.Name)
	}
	sa, err := s.podServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admissionForbidden(a, "error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	if !enforceMountableSecrets(sa) {
		return nil
	}
	if err := limitEphemeralSecretReferences(sa, pod); err != nil {
		return admissionForbidden(a, "%w", err)
	}
	return nil
}

// validateMirrorPodReferences: a mirror pod reflects a static pod, which
// the node runs without the API; it may not use what only the API grants.
func validateMirrorPodReferences(a *attributes, pod *v1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return admissionForbidden(a, "a mirror pod may not reference service accounts")
	}
	if len(podrefs.SecretNames(pod)) > 0 {
		return admissionForbidden(a, "a mirror pod may not reference secrets")
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Projected == nil {
			continue
		}
		for _, src := range vol.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return admissionForbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// shouldAutomount: the pod's choice wins, then the service account's;
// unset means mount.
func shouldAutomount(sa *v1.ServiceAccount, pod *v1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// podServiceAccount reads a service account from the watch cache, as
// upstream's plugin reads its informer, then from etcd for one created a
// moment ago. A missing "default" is created again: upstream waits for its
// service account controller to do that, and here the server does that
// controller's work (see afterCreate).
func (s *Server) podServiceAccount(ctx context.Context, ns, name string) (*v1.ServiceAccount, error) {
	list, err := s.store(saResource).List(ctx, ns, storage.ListOptions{ResourceVersion: "0", Filter: func(o runtime.Object) bool {
		return o.(*v1.ServiceAccount).Name == name
	}})
	if err != nil {
		return nil, fmt.Errorf("list service accounts: %w", err)
	}
	if len(list.Items) > 0 {
		return list.Items[0].(*v1.ServiceAccount), nil
	}
	obj, err := s.store(saResource).Get(ctx, ns, name)
	if apierrors.IsNotFound(err) && name == defaultServiceAccountName {
		s.ensureServiceAccount(ctx, ns)
		obj, err = s.store(saResource).Get(ctx, ns, name)
	}
	if apierrors.IsNotFound(err) {
		// Upstream's words: the singular resource, no group.
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ServiceAccount), nil
}
