package admission

import (
	"context"
	"maps"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RuntimeClass is upstream's plugin of that name
// (plugin/pkg/admission/runtimeclass): a pod created with a
// runtimeClassName gets the class's overhead and its scheduling
// constraints; a pod naming a missing class, or setting an overhead the
// class does not define, is refused.
type RuntimeClass struct {
	RuntimeClasses RuntimeClassGetter
}

var (
	_ MutationInterface   = (*RuntimeClass)(nil)
	_ ValidationInterface = (*RuntimeClass)(nil)
)

// Name is the plugin's upstream name.
func (*RuntimeClass) Name() string { return RuntimeClassName }

// Handles: creates.
func (*RuntimeClass) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Admit sets the pod's overhead and merges the class's scheduling into it.
func (p *RuntimeClass) Admit(ctx context.Context, a *Attributes) error {
	pod, rc, err := p.podAndClass(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	if err := setOverhead(a, pod, rc); err != nil {
		return err
	}
	return setScheduling(a, pod, rc)
}

// Validate checks the final pod's overhead against its class.
func (p *RuntimeClass) Validate(ctx context.Context, a *Attributes) error {
	pod, rc, err := p.podAndClass(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		return nil
	}
	if pod.Spec.Overhead != nil {
		return forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// podAndClass is the created pod (nil for other writes) and its class
// (nil without runtimeClassName).
func (p *RuntimeClass) podAndClass(ctx context.Context, a *Attributes) (*v1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.Object.(*v1.Pod)
	if !ok || a.Subresource != "" || a.GroupResource() != v1.Resource("pods") {
		return nil, nil, nil
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, err := p.RuntimeClasses.GetRuntimeClass(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, nil, forbidden(a, "pod rejected: RuntimeClass %q not found", name)
	}
	if err != nil {
		return nil, nil, err
	}
	return pod, rc, nil
}

// setOverhead copies the class's overhead into the pod; one the pod
// already has must be the same.
func setOverhead(a *Attributes, pod *v1.Pod, rc *nodev1.RuntimeClass) error {
	if rc == nil || rc.Overhead == nil {
		return nil
	}
	if pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
		return forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	}
	pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	return nil
}

// setScheduling adds the class's node selector (a key the pod sets to
// another value is a conflict) and tolerations (merged as upstream's
// tolerations.MergeTolerations: redundant ones dropped).
func setScheduling(a *Attributes, pod *v1.Pod, rc *nodev1.RuntimeClass) error {
	if rc == nil || rc.Scheduling == nil {
		return nil
	}
	selector := pod.Spec.NodeSelector
	if selector == nil {
		selector = maps.Clone(rc.Scheduling.NodeSelector)
	} else {
		for key, classValue := range rc.Scheduling.NodeSelector {
			if podValue, ok := selector[key]; ok && podValue != classValue {
				return forbidden(a, "conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s",
					key, classValue, key, podValue)
			}
			selector[key] = classValue
		}
	}
	pod.Spec.NodeSelector = selector
	pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	return nil
}

// mergeTolerations is first then second, without the tolerations another
// one of the list already covers (the first of equal ones kept).
func mergeTolerations(first, second []v1.Toleration) []v1.Toleration {
	all := append(append([]v1.Toleration(nil), first...), second...)
	var merged []v1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if toleratesSuperset(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && toleratesSuperset(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// toleratesSuperset: ss tolerates every taint t does.
func toleratesSuperset(ss, t v1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(ss, t) {
		return true
	}
	// An empty key with Exists matches every key; an empty effect every effect.
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != v1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == v1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case v1.TolerationOpEqual, "":
		return t.Operator == v1.TolerationOpEqual && t.Value == ss.Value
	case v1.TolerationOpExists:
		return true
	}
	return false
}
