package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pod-level resources as upstream's validatePodResources and
// validatePodResourceConsistency check them.
func TestValidatePodLevelResources(t *testing.T) {
	q := resource.MustParse
	podLevel := func(r v1.ResourceRequirements, c v1.ResourceRequirements) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Resources = &r
			p.Spec.Containers[0].Resources = c
			SetDefaults(p)
		}
	}
	cases := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{"limits only", podLevel(v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("1"), "memory": q("64Mi")}}, v1.ResourceRequirements{}), nil},
		{"containers inside the pod's budget", podLevel(
			v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": q("500m")}, Limits: v1.ResourceList{"cpu": q("1")}},
			v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": q("200m")}, Limits: v1.ResourceList{"cpu": q("1")}}), nil},
		{"unsupported resource", podLevel(v1.ResourceRequirements{Limits: v1.ResourceList{"ephemeral-storage": q("1Gi")}}, v1.ResourceRequirements{}),
			[]string{`Unsupported value: spec.resources.limits[ephemeral-storage]: supported values: "cpu", "hugepages-", "memory"`}},
		{"request above limit", podLevel(v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": q("2")}, Limits: v1.ResourceList{"cpu": q("1")}}, v1.ResourceRequirements{}),
			[]string{"Invalid value: spec.resources.requests: must be less than or equal to cpu limit of 1"}},
		{"containers request more than the pod", podLevel(
			v1.ResourceRequirements{Requests: v1.ResourceList{"memory": q("32Mi")}},
			v1.ResourceRequirements{Requests: v1.ResourceList{"memory": q("64Mi")}}),
			[]string{"Invalid value: spec.resources.requests[memory]: must be greater than or equal to aggregate container requests of 64Mi"}},
		{"a container limit above the pod's", podLevel(
			v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("1")}},
			v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("2")}}),
			[]string{
				"Invalid value: spec.resources.containers[0][cpu].limits: must be less than or equal to pod limits of 1",
				// The pod's request defaults to the containers' (2, from their
				// limit), more than the pod's limit.
				"Invalid value: spec.resources.requests: must be less than or equal to cpu limit of 1",
			}},
		{"windows", func(p *v1.Pod) {
			p.Spec.OS = &v1.PodOS{Name: v1.Windows}
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{"cpu": q("1")}}
		}, []string{"Forbidden: spec.resources: may not be set for a windows pod"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			got, want := errDetails(Validate(pod)), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q", got, want)
			}
		})
	}
}
