package admission

import (
	"context"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func classPod(class string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if class != "" {
		pod.Spec.RuntimeClassName = &class
	}
	return pod
}

func runtimeClassPlugin() *RuntimeClass {
	overhead := v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	return &RuntimeClass{RuntimeClasses: fakeReaders{runtimes: []*nodev1.RuntimeClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "crun"},
		{ObjectMeta: metav1.ObjectMeta{Name: "heavy"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pinned"}, Handler: "crun", Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"runtime": "crun"},
			Tolerations: []v1.Toleration{
				{Key: "runtime", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
				{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "sandbox"},
			},
		}},
	}}}
}

func admitAndValidate(p *RuntimeClass, pod *v1.Pod) error {
	a := &Attributes{Operation: admissionv1.Create, Resource: podsResource, Namespace: pod.Namespace, Object: pod}
	if err := p.Admit(context.Background(), a); err != nil {
		return err
	}
	return p.Validate(context.Background(), a)
}

// TestRuntimeClassRefusals: upstream's messages, as a 403 naming the pod.
func TestRuntimeClassRefusals(t *testing.T) {
	p := runtimeClassPlugin()
	differs := classPod("heavy")
	differs.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	unasked := classPod("plain")
	unasked.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	noClass := classPod("")
	noClass.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	conflict := classPod("pinned")
	conflict.Spec.NodeSelector = map[string]string{"runtime": "runc"}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"missing class", classPod("nosuch"), `pods "p" is forbidden: pod rejected: RuntimeClass "nosuch" not found`},
		{"overhead differs", differs, `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"overhead without the class's", unasked, `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"overhead without a class", noClass, `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"node selector conflict", conflict, `pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = crun; pod.spec.nodeSelector[runtime] = runc`},
	} {
		err := admitAndValidate(p, tc.pod)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

func TestRuntimeClassOverhead(t *testing.T) {
	p := runtimeClassPlugin()
	pod := classPod("heavy")
	if err := admitAndValidate(p, pod); err != nil {
		t.Fatal(err)
	}
	if cpu, mem := pod.Spec.Overhead[v1.ResourceCPU], pod.Spec.Overhead[v1.ResourceMemory]; cpu.String() != "250m" || mem.String() != "64Mi" {
		t.Errorf("overhead %v", pod.Spec.Overhead)
	}
	same := classPod("heavy")
	same.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("0.25"), v1.ResourceMemory: resource.MustParse("64Mi")}
	if err := admitAndValidate(p, same); err != nil {
		t.Errorf("the class's overhead, written otherwise: %v", err)
	}
	for _, name := range []string{"", "plain"} {
		pod := classPod(name)
		if err := admitAndValidate(p, pod); err != nil || pod.Spec.Overhead != nil {
			t.Errorf("class %q: %v, overhead %v", name, err, pod.Spec.Overhead)
		}
	}
}

func TestRuntimeClassScheduling(t *testing.T) {
	p := runtimeClassPlugin()
	pod := classPod("pinned")
	if err := admitAndValidate(p, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeSelector["runtime"] != "crun" || len(pod.Spec.Tolerations) != 2 {
		t.Errorf("selector %v, tolerations %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}

	// The pod's own selector keeps its keys; the same value is no conflict.
	both := classPod("pinned")
	both.Spec.NodeSelector = map[string]string{"disk": "ssd", "runtime": "crun"}
	// A toleration of the pod that covers the class's (Exists, any effect)
	// leaves the class's out; one the class's covers is dropped.
	both.Spec.Tolerations = []v1.Toleration{
		{Key: "runtime", Operator: v1.TolerationOpExists},
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "sandbox", Effect: v1.TaintEffectNoExecute},
	}
	if err := admitAndValidate(p, both); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"disk": "ssd", "runtime": "crun"}; len(both.Spec.NodeSelector) != 2 || both.Spec.NodeSelector["disk"] != "ssd" {
		t.Errorf("selector %v, want %v", both.Spec.NodeSelector, want)
	}
	want := []v1.Toleration{
		{Key: "runtime", Operator: v1.TolerationOpExists},
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "sandbox"},
	}
	if !slices.Equal(both.Spec.Tolerations, want) {
		t.Errorf("tolerations %v, want %v", both.Spec.Tolerations, want)
	}

	// Subresources and other kinds are not this plugin's.
	a := &Attributes{Operation: admissionv1.Create, Resource: podsResource, Subresource: "binding", Object: classPod("nosuch")}
	if err := p.Admit(context.Background(), a); err != nil {
		t.Errorf("subresource: %v", err)
	}
}
