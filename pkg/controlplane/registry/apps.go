package registry

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

func (b *builder) deployments() *Resource {
	return &Resource{
		GVK:          appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Plural:       "deployments",
		Singular:     "deployment",
		ShortNames:   []string{"deploy"},
		Categories:   categoriesAll,
		Namespaced:   true,
		Verbs:        allVerbs,
		Subresources: []string{"scale", "status"},
		New:          func() runtime.Object { return &appsv1.Deployment{} },
		NewList:      func() runtime.Object { return &appsv1.DeploymentList{} },

		Default: hook(defaultDeployment),
		PrepareForCreate: hook(func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{}
			d.Generation = 1
		}),
		// Annotations bump the generation too: they are copied to replica sets.
		PrepareForUpdate: hook2(func(d, old *appsv1.Deployment) {
			d.Status = old.Status
			d.Generation = old.Generation
			if !equality.Semantic.DeepEqual(d.Spec, old.Spec) || !equality.Semantic.DeepEqual(d.Annotations, old.Annotations) {
				d.Generation = old.Generation + 1
			}
		}),
		PrepareForStatusUpdate: hook2(func(d, old *appsv1.Deployment) {
			d.Spec, d.Labels, d.Generation = old.Spec, old.Labels, old.Generation
		}),
		Validate:             check(validateDeployment),
		ValidateUpdate:       check2(validateDeploymentUpdate),
		ValidateStatusUpdate: check2(validateDeploymentStatusUpdate),
		FieldSet:             fieldSet[*appsv1.Deployment](true, nil),
		Table:                table(deploymentColumns, b.deploymentRow),
		GetScale: func(o runtime.Object) *autoscalingv1.Scale {
			d := o.(*appsv1.Deployment)
			return scaleOf(&d.ObjectMeta, d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector)
		},
		SetScale: func(o runtime.Object, s *autoscalingv1.Scale) field.ErrorList {
			return setReplicas(&o.(*appsv1.Deployment).Spec.Replicas, s)
		},
	}
}

func (b *builder) replicaSets() *Resource {
	return &Resource{
		GVK:          appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Plural:       "replicasets",
		Singular:     "replicaset",
		ShortNames:   []string{"rs"},
		Categories:   categoriesAll,
		Namespaced:   true,
		Verbs:        allVerbs,
		Subresources: []string{"scale", "status"},
		New:          func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:      func() runtime.Object { return &appsv1.ReplicaSetList{} },

		Default: hook(func(rs *appsv1.ReplicaSet) {
			if rs.Spec.Replicas == nil {
				rs.Spec.Replicas = ptrTo(int32(1))
			}
			defaultTemplate(&rs.Spec.Template)
		}),
		PrepareForCreate: hook(func(rs *appsv1.ReplicaSet) {
			rs.Status = appsv1.ReplicaSetStatus{}
			rs.Generation = 1
		}),
		PrepareForUpdate: hook2(func(rs, old *appsv1.ReplicaSet) {
			rs.Status = old.Status
			rs.Generation = old.Generation
			if !equality.Semantic.DeepEqual(rs.Spec, old.Spec) {
				rs.Generation = old.Generation + 1
			}
		}),
		PrepareForStatusUpdate: hook2(func(rs, old *appsv1.ReplicaSet) {
			rs.Spec, rs.Labels, rs.Generation = old.Spec, old.Labels, old.Generation
		}),
		Validate:             check(validateReplicaSet),
		ValidateUpdate:       check2(validateReplicaSetUpdate),
		ValidateStatusUpdate: check2(validateReplicaSetStatusUpdate),
		FieldSet: fieldSet(true, func(rs *appsv1.ReplicaSet) fields.Set {
			return fields.Set{"status.replicas": itoa(rs.Status.Replicas)}
		}),
		Table: table(replicaSetColumns, b.replicaSetRow),
		GetScale: func(o runtime.Object) *autoscalingv1.Scale {
			rs := o.(*appsv1.ReplicaSet)
			return scaleOf(&rs.ObjectMeta, rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector)
		},
		SetScale: func(o runtime.Object, s *autoscalingv1.Scale) field.ErrorList {
			return setReplicas(&o.(*appsv1.ReplicaSet).Spec.Replicas, s)
		},
	}
}

func defaultDeployment(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptrTo(int32(1))
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := spec.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptrTo(int32(600))
	}
	defaultTemplate(&spec.Template)
}

// defaultTemplate applies the pod spec defaults to a pod template, but not
// the pod-only one (requests copied from limits).
func defaultTemplate(t *v1.PodTemplateSpec) {
	type key struct {
		list int
		i    int
	}
	missing := map[key][]v1.ResourceName{}
	nilRequests := map[key]bool{}
	lists := func(s *v1.PodSpec) [][]v1.Container { return [][]v1.Container{s.InitContainers, s.Containers} }
	for l, cs := range lists(&t.Spec) {
		for i, c := range cs {
			k := key{l, i}
			nilRequests[k] = c.Resources.Requests == nil
			for name := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[name]; !ok {
					missing[k] = append(missing[k], name)
				}
			}
		}
	}
	pod := &v1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	podspec.SetDefaults(pod)
	t.Spec = pod.Spec
	for l, cs := range lists(&t.Spec) {
		for i := range cs {
			r := &cs[i].Resources
			for _, name := range missing[key{l, i}] {
				delete(r.Requests, name)
			}
			if nilRequests[key{l, i}] && len(r.Requests) == 0 {
				r.Requests = nil
			}
		}
	}
}

// validateTemplate validates a pod template of a replicated workload at
// path p: the pod rules (through podspec, with paths rebased to p), labels
// matching selector, restartPolicy Always, no activeDeadlineSeconds.
func validateTemplate(t *v1.PodTemplateSpec, selector labels.Selector, namespace string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	meta := metav1.ObjectMeta{Name: "template", Namespace: namespace, Labels: t.Labels, Annotations: t.Annotations}
	for _, e := range podspec.Validate(&v1.Pod{ObjectMeta: meta, Spec: t.Spec}) {
		if strings.HasPrefix(e.Field, "metadata.name") || strings.HasPrefix(e.Field, "metadata.namespace") {
			continue
		}
		e.Field = p.String() + "." + e.Field
		errs = append(errs, e)
	}
	sp := p.Child("spec")
	if t.Spec.RestartPolicy != v1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(sp.Child("restartPolicy"), t.Spec.RestartPolicy, []v1.RestartPolicy{v1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(sp.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validateReplicated checks what deployments and replica sets share:
// replicas, minReadySeconds, a required non-empty selector and the template.
func validateReplicated(replicas *int32, minReady int32, sel *metav1.LabelSelector, t *v1.PodTemplateSpec, ns string, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if replicas != nil {
		errs = append(errs, nonNegative(int64(*replicas), sp.Child("replicas"))...)
	}
	errs = append(errs, nonNegative(int64(minReady), sp.Child("minReadySeconds"))...)
	if sel == nil {
		errs = append(errs, field.Required(sp.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, sp.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(sp.Child("selector"), sel, "empty selector is invalid for deployment"))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(sp.Child("selector"), sel, "invalid label selector"))
	}
	return append(errs, validateTemplate(t, selector, ns, sp.Child("template"))...)
}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := validateMeta(&d.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec, sp := &d.Spec, field.NewPath("spec")
	errs = append(errs, validateReplicated(spec.Replicas, spec.MinReadySeconds, spec.Selector, &spec.Template, d.Namespace, sp)...)

	strategy := sp.Child("strategy")
	switch spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(strategy.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if ru := spec.Strategy.RollingUpdate; ru == nil {
			errs = append(errs, field.Required(strategy.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			errs = append(errs, validateRollingUpdate(ru, strategy.Child("rollingUpdate"))...)
		}
	default:
		valid := []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}
		errs = append(errs, field.NotSupported(strategy.Child("type"), spec.Strategy.Type, valid))
	}
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), sp.Child("revisionHistoryLimit"))...)
	}
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		errs = append(errs, nonNegative(int64(*pds), sp.Child("progressDeadlineSeconds"))...)
		if *pds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(sp.Child("progressDeadlineSeconds"), *pds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	value := func(v *intstr.IntOrString, fp *field.Path) int {
		if v == nil {
			return 0
		}
		if v.Type == intstr.String {
			n, ok := percent(v.StrVal)
			if !ok {
				errs = append(errs, field.Invalid(fp, v.StrVal, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"))
			}
			return n
		}
		errs = append(errs, nonNegative(int64(v.IntVal), fp)...)
		return int(v.IntVal)
	}
	unavailable := value(ru.MaxUnavailable, p.Child("maxUnavailable"))
	surge := value(ru.MaxSurge, p.Child("maxSurge"))
	if unavailable == 0 && surge == 0 {
		errs = append(errs, field.Invalid(p.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v := ru.MaxUnavailable; v != nil && v.Type == intstr.String {
		if n, ok := percent(v.StrVal); ok && n > 100 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), v.StrVal, "must not be greater than 100%"))
		}
	}
	return errs
}

// percent parses "[0-9]+%".
func percent(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func validateSelectorUnchanged(sel, old *metav1.LabelSelector) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(sel, old, field.NewPath("spec", "selector"))
}

func validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := validateMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateDeployment(d)...)
	return append(errs, validateSelectorUnchanged(d.Spec.Selector, old.Spec.Selector)...)
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := validateMeta(&rs.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := &rs.Spec
	return append(errs, validateReplicated(spec.Replicas, spec.MinReadySeconds, spec.Selector, &spec.Template, rs.Namespace, field.NewPath("spec"))...)
}

func validateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := validateMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateReplicaSet(rs)...)
	return append(errs, validateSelectorUnchanged(rs.Spec.Selector, old.Spec.Selector)...)
}

// count is one status counter: never negative, and when capped never
// above status.replicas.
type count struct {
	name   string
	value  int64
	capped bool
}

func validateCounts(replicas, ready, available int32, counts ...count) field.ErrorList {
	sp := field.NewPath("status")
	counts = append([]count{{"replicas", int64(replicas), false}, {"readyReplicas", int64(ready), true}, {"availableReplicas", int64(available), true}}, counts...)
	var errs field.ErrorList
	for _, c := range counts {
		errs = append(errs, nonNegative(c.value, sp.Child(c.name))...)
		if c.capped && c.value > int64(replicas) {
			errs = append(errs, field.Invalid(sp.Child(c.name), c.value, "cannot be greater than status.replicas"))
		}
	}
	if available > ready {
		errs = append(errs, field.Invalid(sp.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return errs
}

func validateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	st := d.Status
	counts := []count{
		{"updatedReplicas", int64(st.UpdatedReplicas), true},
		{"unavailableReplicas", int64(st.UnavailableReplicas), false},
		{"observedGeneration", st.ObservedGeneration, false},
	}
	if st.CollisionCount != nil {
		counts = append(counts, count{"collisionCount", int64(*st.CollisionCount), false})
	}
	errs := validateMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateCounts(st.Replicas, st.ReadyReplicas, st.AvailableReplicas, counts...)...)
}

func validateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	st := rs.Status
	errs := validateMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateCounts(st.Replicas, st.ReadyReplicas, st.AvailableReplicas,
		count{"fullyLabeledReplicas", int64(st.FullyLabeledReplicas), true},
		count{"observedGeneration", st.ObservedGeneration, false})...)
}

// Scale subresource.

func scaleOf(m *metav1.ObjectMeta, replicas *int32, current int32, sel *metav1.LabelSelector) *autoscalingv1.Scale {
	s := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID,
			ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp,
		},
		Status: autoscalingv1.ScaleStatus{Replicas: current},
	}
	// Stored objects are defaulted; a nil count reads as the default (1).
	s.Spec.Replicas = 1
	if replicas != nil {
		s.Spec.Replicas = *replicas
	}
	if parsed, err := metav1.LabelSelectorAsSelector(sel); err == nil && sel != nil {
		s.Status.Selector = parsed.String()
	}
	return s
}

func setReplicas(replicas **int32, s *autoscalingv1.Scale) field.ErrorList {
	if errs := nonNegative(int64(s.Spec.Replicas), field.NewPath("spec", "replicas")); len(errs) > 0 {
		return errs
	}
	*replicas = ptrTo(s.Spec.Replicas)
	return nil
}

func ptrTo[T any](v T) *T { return &v }

func itoa(i int32) string { return strconv.Itoa(int(i)) }
