package registry

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runtimeClass(name, handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Handler: handler}
}

func TestRuntimeClassValidation(t *testing.T) {
	runtimeClasses := testRegistry.Get("node.k8s.io", "v1", "runtimeclasses")
	ok := runtimeClass("crun", "crun")
	ok.Overhead = &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")}}
	ok.Scheduling = &nodev1.Scheduling{
		NodeSelector: map[string]string{"runtime": "crun"},
		Tolerations:  []v1.Toleration{{Key: "runtime", Operator: v1.TolerationOpEqual, Value: "crun", Effect: v1.TaintEffectNoSchedule}},
	}
	expectErrors(t, "valid", runtimeClasses.Validate(ok))

	tests := []struct {
		name   string
		mutate func(*nodev1.RuntimeClass)
		want   []string
	}{
		{"empty handler", func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, []string{"FieldValueInvalid handler"}},
		{"handler not a DNS label", func(rc *nodev1.RuntimeClass) { rc.Handler = "run.c" }, []string{"FieldValueInvalid handler"}},
		{"name not a DNS subdomain", func(rc *nodev1.RuntimeClass) { rc.Name = "Crun" }, []string{"FieldValueInvalid metadata.name"}},
		{"negative overhead", func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed[v1.ResourceCPU] = resource.MustParse("-1")
		}, []string{"FieldValueInvalid overhead.limits[cpu]"}},
		{"not a resource for containers", func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed["pods"] = resource.MustParse("1")
		}, []string{"FieldValueInvalid overhead.limits[pods]"}},
		{"bad node selector", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.NodeSelector = map[string]string{"-bad": "x"}
		}, []string{"FieldValueInvalid scheduling.nodeSelector"}},
		{"bad toleration", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations[0].Operator = "Near"
		}, []string{"FieldValueNotSupported scheduling.tolerations[0].operator"}},
		{"duplicate toleration", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations, rc.Scheduling.Tolerations[0])
		}, []string{"FieldValueDuplicate scheduling.tolerations[1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := ok.DeepCopy()
			tc.mutate(rc)
			expectErrors(t, tc.name, runtimeClasses.Validate(rc), tc.want...)
		})
	}
}

func TestRuntimeClassUpdate(t *testing.T) {
	runtimeClasses := testRegistry.Get("node.k8s.io", "v1", "runtimeclasses")
	old := runtimeClass("crun", "crun")
	changed := old.DeepCopy()
	changed.Handler = "runc"
	expectErrors(t, "handler", runtimeClasses.ValidateUpdate(changed, old), "FieldValueInvalid handler")

	scheduled := old.DeepCopy()
	scheduled.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "crun"}}
	expectErrors(t, "scheduling may change", runtimeClasses.ValidateUpdate(scheduled, old))
	scheduled.Scheduling.NodeSelector = map[string]string{"-bad": "x"}
	expectErrors(t, "the new object is validated", runtimeClasses.ValidateUpdate(scheduled, old), "FieldValueInvalid scheduling.nodeSelector")
}

func TestRuntimeClassTable(t *testing.T) {
	now, reg := fixedNow(t)
	runtimeClasses := reg.Get("node.k8s.io", "v1", "runtimeclasses")
	rc := runtimeClass("sandboxed", "crun")
	rc.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	cols, cells := rows(t, runtimeClasses, false, rc)
	if want := []string{"Name", "Handler", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("columns %q", cols)
	}
	if want := []interface{}{"sandboxed", "crun", "60s"}; !slices.Equal(cells[0], want) {
		t.Errorf("row %v, want %v", cells[0], want)
	}
	if runtimeClasses.Namespaced || len(runtimeClasses.ShortNames) != 0 {
		t.Errorf("cluster-scoped without short names, as upstream: namespaced %v, short names %v", runtimeClasses.Namespaced, runtimeClasses.ShortNames)
	}
}
