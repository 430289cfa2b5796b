package registry

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The create and delete hooks: what creating or deleting one object does
// to others, or how a deletion proceeds, per resource.

// Services.

// beginServiceCreate allocates a new service's cluster IPs and node ports
// (BeginCreate). The API server is the only writer of services, so the
// set in use is what is stored; the lock, held until the service is
// stored, keeps two creates from taking the same address or port.
func (b *builder) beginServiceCreate(services *Resource) func(context.Context, runtime.Object, Storage) (FinishFunc, error) {
	return func(ctx context.Context, obj runtime.Object, s Storage) (FinishFunc, error) {
		b.serviceMu.Lock()
		stored, err := s.List(ctx, services, "")
		if err == nil {
			inUse := make([]*v1.Service, len(stored))
			for i, o := range stored {
				inUse[i] = o.(*v1.Service)
			}
			err = b.serviceIPs.Allocate(obj.(*v1.Service), inUse)
		}
		if err != nil {
			b.serviceMu.Unlock()
			return nil, err
		}
		return func(context.Context, bool) { b.serviceMu.Unlock() }, nil
	}
}

// Namespaces.

// namespaceCreated gives a new namespace its default service account
// (AfterCreate; the service account controller's job upstream).
func namespaceCreated(serviceAccounts *Resource) func(context.Context, runtime.Object, Storage) {
	return func(ctx context.Context, obj runtime.Object, s Storage) {
		s.CreateInternal(ctx, serviceAccounts, DefaultServiceAccount(obj.(*v1.Namespace).Name))
	}
}

// DefaultServiceAccount is the service account every namespace has.
func DefaultServiceAccount(namespace string) *v1.ServiceAccount {
	return &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}
}

// A namespace being deleted turns Terminating (PrepareForDelete) and is
// emptied before it goes (FinalizeDelete).
func prepareNamespaceForDelete(ns *v1.Namespace) { ns.Status.Phase = v1.NamespaceTerminating }

func finalizeNamespaceDelete(obj runtime.Object, s Storage) {
	s.PurgeNamespace(obj.(*v1.Namespace).Name)
}

// Pods.

// podGracePeriod is the deletion's grace: only bound, unfinished pods get
// one (the pod's own unless the request names another).
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod := obj.(*v1.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return 0
	}
	g := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		g = *opts.GracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds < g {
		g = *pod.DeletionGracePeriodSeconds // a deletion may only shorten the grace
	}
	if g < 0 {
		g = 0
	}
	return g
}

// bindPod sets spec.nodeName once, as the scheduler's Binding does (Bind).
func (b *builder) bindPod(obj runtime.Object, binding *v1.Binding) error {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		return apierrors.NewConflict(v1.Resource("pods/binding"), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	}
	if pod.Spec.NodeName != "" {
		return apierrors.NewConflict(v1.Resource("pods/binding"), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = binding.Target.Name
	b.setPodScheduled(pod) // as upstream's binding does
	for k, v := range binding.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	return nil
}

// setPodScheduled marks the pod's PodScheduled condition True.
func (b *builder) setPodScheduled(pod *v1.Pod) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == v1.PodScheduled {
			if c.Status != v1.ConditionTrue {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionTrue, "", "", b.now()
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: b.now(),
	})
}
