package podspec

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateResizePolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		restart  v1.RestartPolicy
		policies []v1.ContainerResizePolicy
		want     []string
	}{
		{"both resources", v1.RestartPolicyAlways, []v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: v1.NotRequired}, {ResourceName: "memory", RestartPolicy: v1.RestartContainer}}, nil},
		{"duplicate", v1.RestartPolicyAlways, []v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: v1.NotRequired}, {ResourceName: "cpu", RestartPolicy: v1.NotRequired}},
			[]string{duplicate("spec.containers[0].resizePolicy[1]")}},
		{"other resource", v1.RestartPolicyAlways, []v1.ContainerResizePolicy{{ResourceName: "ephemeral-storage", RestartPolicy: v1.NotRequired}},
			[]string{unsupported("spec.containers[0].resizePolicy")}},
		{"empty", v1.RestartPolicyAlways, []v1.ContainerResizePolicy{{}},
			[]string{required("spec.containers[0].resizePolicy"), required("spec.containers[0].resizePolicy")}},
		{"bad policy", v1.RestartPolicyAlways, []v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "Sometimes"}},
			[]string{unsupported("spec.containers[0].resizePolicy")}},
		{"restart in a Never pod", v1.RestartPolicyNever, []v1.ContainerResizePolicy{{ResourceName: "memory", RestartPolicy: v1.RestartContainer}},
			[]string{invalid("spec.containers[0].resizePolicy")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.RestartPolicy = tc.restart
			pod.Spec.Containers[0].ResizePolicy = tc.policies
			if got := errStrings(Validate(pod)); !slices.Equal(got, tc.want) {
				t.Errorf("errors %v, want %v", got, tc.want)
			}
		})
	}
}

func guaranteedPod(cpu, mem string) *v1.Pod {
	pod := basePod()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	pod.Status.QOSClass = v1.PodQOSGuaranteed
	return pod
}

func TestValidateResize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *v1.Pod)
		old    func(p *v1.Pod)
		want   string // a substring of one of the errors, "" for none
	}{
		{"cpu up", func(p *v1.Pod) { setCPU(p, "200m", "200m") }, nil, ""},
		{"cpu down", func(p *v1.Pod) { setCPU(p, "50m", "50m") }, nil, ""},
		{"memory up", func(p *v1.Pod) { setMemory(p, "128Mi", "128Mi") }, nil, ""},
		{"qos change", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("1") }, nil,
			"spec: Invalid value: \"Guaranteed\": Pod QOS Class may not change as a result of resizing"},
		// Allowed since v1.34 whatever the resizePolicy: the node checks usage.
		{"memory limit down", func(p *v1.Pod) { setMemory(p, "32Mi", "32Mi") }, nil, ""},
		{"memory limit down, RestartContainer", func(p *v1.Pod) { setMemory(p, "32Mi", "32Mi") },
			func(p *v1.Pod) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
			}, ""},
		{"limit removed", func(p *v1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, v1.ResourceCPU) }, nil,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{"image", func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:2" }, nil, "spec: Forbidden: only cpu and memory resources are mutable"},
		{"static", func(p *v1.Pod) { setCPU(p, "200m", "200m") },
			func(p *v1.Pod) { p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"} }, ": Forbidden: static pods cannot be resized"},
		{"pod-level resources", func(p *v1.Pod) { setCPU(p, "200m", "200m") },
			func(p *v1.Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
			}, ": Forbidden: pods with pod-level resources cannot be resized"},
		{"running without resources", func(p *v1.Pod) { setCPU(p, "200m", "200m") },
			func(p *v1.Pod) {
				p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
			}, "spec: Forbidden: Pod running on node without support for resize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := guaranteedPod("100m", "64Mi")
			if tc.old != nil {
				tc.old(old)
			}
			old.ResourceVersion = "1"
			cur := old.DeepCopy()
			tc.mutate(cur)
			errs := ValidateResize(cur, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && !slices.ContainsFunc(errs, func(e *field.Error) bool { return strings.Contains(e.Error(), tc.want) }):
				t.Errorf("errors %v, want one with %q", errs, tc.want)
			}
		})
	}
}

func setCPU(p *v1.Pod, req, lim string) {
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(req)
	p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse(lim)
}

func setMemory(p *v1.Pod, req, lim string) {
	p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(req)
	p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse(lim)
}
