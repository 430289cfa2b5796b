package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podrefs"
)

// DefaultServiceAccountName is the service account of pods that name none.
const DefaultServiceAccountName = "default"

// ServiceAccount is upstream's plugin of that name: it gives created pods
// their service account and its token volume (Admit), and checks the
// ephemeral containers added to a pod (Validate).
type ServiceAccount struct {
	ServiceAccounts ServiceAccountGetter
	// NameSuffix draws the token volume name's random part.
	NameSuffix func() string
}

var (
	_ MutationInterface   = (*ServiceAccount)(nil)
	_ ValidationInterface = (*ServiceAccount)(nil)
)

// Name is the plugin's upstream name.
func (*ServiceAccount) Name() string { return ServiceAccountName }

// Handles: creates and updates.
func (*ServiceAccount) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}

// Admit is the plugin on pod creation: a pod runs as "default" unless it names a service account,
// which must exist; it gets the projected API token volume unless it or
// its service account opts out, and the service account's image pull
// secrets when it has none of its own. Mirror pods are never changed (the
// node would see a spec other than its static pod's and delete it); they
// are only checked for references they may not make.
func (p *ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*v1.Pod)
	if !ok || a.Operation != admissionv1.Create || a.Subresource != "" {
		return nil
	}
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return validateMirrorPodReferences(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	sa, err := p.ServiceAccounts.GetServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbidden(a, "error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod, p.NameSuffix)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = append([]v1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	if enforceMountableSecrets(sa) {
		if err := limitSecretReferences(sa, pod); err != nil {
			return forbidden(a, "%w", err)
		}
	}
	return nil
}

// Validate is the plugin's check on adding ephemeral containers: the pod's service account must still exist, and
// the containers may only use its secrets when it enforces that.
func (p *ServiceAccount) Validate(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*v1.Pod)
	if !ok || a.Operation != admissionv1.Update || a.Subresource != "ephemeralcontainers" {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return forbidden(a, "no service account specified for pod %s/%s", pod.Namespace, pod.Name)
	}
	sa, err := p.ServiceAccounts.GetServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbidden(a, "error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	if !enforceMountableSecrets(sa) {
		return nil
	}
	if err := limitEphemeralSecretReferences(sa, pod); err != nil {
		return forbidden(a, "%w", err)
	}
	return nil
}

// validateMirrorPodReferences: a mirror pod reflects a static pod, which
// the node runs without the API; it may not use what only the API grants.
func validateMirrorPodReferences(a *Attributes, pod *v1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return forbidden(a, "a mirror pod may not reference service accounts")
	}
	if len(podrefs.SecretNames(pod)) > 0 {
		return forbidden(a, "a mirror pod may not reference secrets")
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Projected == nil {
			continue
		}
		for _, src := range vol.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return forbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")
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
