package registry

import (
	nodev1 "k8s.io/api/node/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// RuntimeClasses (node.k8s.io/v1), as upstream's
// pkg/registry/node/runtimeclass and pkg/apis/node/validation: the CRI
// handler a pod's sandbox runs with, the overhead the RuntimeClass
// admission plugin puts into pods, and scheduling constraints it merges
// into them.
func (b *builder) runtimeClasses() *Resource {
	return &Resource{
		GVK:      nodev1.SchemeGroupVersion.WithKind("RuntimeClass"),
		Plural:   "runtimeclasses",
		Singular: "runtimeclass",
		Verbs:    allVerbs,
		New:      func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList:  func() runtime.Object { return &nodev1.RuntimeClassList{} },

		Validate:       check(validateRuntimeClass),
		ValidateUpdate: check2(validateRuntimeClassUpdate),
		FieldSet:       fieldSet[*nodev1.RuntimeClass](false, nil),
		Table:          table(runtimeClassColumns, b.runtimeClassRow),
	}
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := validateMeta(&rc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateRuntimeClassSpec(rc)...)
}

// validateRuntimeClassSpec checks what is not metadata, on create and on
// update.
func validateRuntimeClassSpec(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	// An empty handler fails the label rule too: upstream has no separate
	// "required" error for it.
	for _, msg := range apimachineryvalidation.NameIsDNSLabel(rc.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		errs = append(errs, podspec.ValidateOverhead(rc.Overhead.PodFixed, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		}
		errs = append(errs, validateClassTolerations(s, p.Child("tolerations"))...)
	}
	return errs
}

// validateClassTolerations is the pod's tolerations rule plus upstream's
// uniqueness by the list's keys (key, operator, value, effect).
func validateClassTolerations(s *nodev1.Scheduling, p *field.Path) field.ErrorList {
	errs := podspec.ValidateTolerations(s.Tolerations, p)
	type listKey struct{ key, op, value, effect string }
	seen := map[listKey]bool{}
	for i, t := range s.Tolerations {
		k := listKey{t.Key, string(t.Operator), t.Value, string(t.Effect)}
		if seen[k] {
			errs = append(errs, field.Duplicate(p.Index(i), t))
		}
		seen[k] = true
	}
	return errs
}

// validateRuntimeClassUpdate: the handler is fixed once created; overhead
// and scheduling may change (pods already admitted keep what they got).
func validateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	errs := validateMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateRuntimeClassSpec(rc)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(rc.Handler, old.Handler, field.NewPath("handler"))...)
}

// Upstream's printer: NAME, HANDLER, AGE.
var runtimeClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	col("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]),
	ageColumn,
}

func (b *builder) runtimeClassRow(rc *nodev1.RuntimeClass) []interface{} {
	return []interface{}{rc.Name, rc.Handler, b.age(rc.ObjectMeta)}
}
