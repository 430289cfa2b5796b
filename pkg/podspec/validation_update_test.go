package podspec

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateUpdate(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		old, new func(p *v1.Pod) // applied to the old pod, then to a copy of it
		want     []string
	}{
		{name: "no change"},
		{name: "images and labels may change", new: func(p *v1.Pod) {
			p.Spec.Containers[0].Image = "nginx:1.28"
			p.Spec.InitContainers[0].Image = "busybox:2"
			p.Labels = map[string]string{"rollout": "2"}
		}},
		{name: "activeDeadlineSeconds may be set", new: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(60) }},
		{name: "activeDeadlineSeconds may be lowered", old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(60) },
			new: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(30) }},
		{name: "activeDeadlineSeconds may not be raised", old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(60) },
			new: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(61) }, want: expectErrs(invalid("spec.activeDeadlineSeconds"))},
		{name: "activeDeadlineSeconds may not be cleared", old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(60) },
			new: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, want: expectErrs(invalid("spec.activeDeadlineSeconds"))},
		{name: "tolerations may be added, and their seconds changed",
			old: func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: i64(5)}}
			},
			new: func(p *v1.Pod) {
				p.Spec.Tolerations[0].TolerationSeconds = i64(50)
				p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Operator: v1.TolerationOpExists})
			}},
		{name: "tolerations may not be removed",
			old:  func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}} },
			new:  func(p *v1.Pod) { p.Spec.Tolerations = nil },
			want: expectErrs(forbidden("spec.tolerations"))},
		{name: "scheduling gates may be removed",
			old: func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "a"}, {Name: "b"}} },
			new: func(p *v1.Pod) { p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:] }},
		{name: "scheduling gates may not be added",
			new:  func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "a"}} },
			want: expectErrs(forbidden("spec.schedulingGates[0].name"))},
		{name: "grace period may go from negative to 1",
			old: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(-1) },
			new: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(1) }},
		{name: "other spec fields are immutable",
			new:  func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 },
			want: expectErrs(forbidden("spec"))},
		{name: "containers may not be added",
			new: func(p *v1.Pod) {
				c := p.Spec.Containers[0]
				c.Name, c.Ports = "second", nil
				p.Spec.Containers = append(p.Spec.Containers, c)
			},
			want: expectErrs(forbidden("spec.containers"))},
		{name: "the new pod must be valid; images stay required",
			new:  func(p *v1.Pod) { p.Spec.Containers[0].Image = "" },
			want: expectErrs(required(c0("image")), required(c0("image")))},
		{name: "metadata update rules",
			new: func(p *v1.Pod) {
				p.Name = "other"
				p.ResourceVersion = ""
			},
			want: expectErrs(invalid("metadata.name"), invalid("metadata.resourceVersion"))},
		{name: "mirror annotation may not be added",
			new: func(p *v1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
			},
			want: expectErrs(forbidden("metadata.annotations[kubernetes.io/config.mirror]"), forbidden("spec"))},
		{name: "mirror annotation may not be removed",
			old: func(p *v1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
			},
			new:  func(p *v1.Pod) { p.Annotations = nil },
			want: expectErrs(forbidden("metadata.annotations[kubernetes.io/config.mirror]"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldPod := basePod()
			oldPod.ResourceVersion = "7"
			oldPod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1"}}
			SetDefaults(oldPod)
			if tc.old != nil {
				tc.old(oldPod)
			}
			newPod := oldPod.DeepCopy()
			if tc.new != nil {
				tc.new(newPod)
			}
			errs := ValidateUpdate(newPod, oldPod)
			got, want := errStrings(errs), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q\n%s", got, want, FormatErrors(errs))
			}
		})
	}
}

func TestValidateUpdateMessage(t *testing.T) {
	oldPod := basePod()
	oldPod.ResourceVersion = "1"
	newPod := oldPod.DeepCopy()
	newPod.Spec.Containers[0].WorkingDir = "/srv"
	errs := ValidateUpdate(newPod, oldPod)
	if len(errs) != 1 {
		t.Fatalf("want one error, got %v", errs)
	}
	const prefix = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`," +
		"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
	if msg := errs[0].Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, `"workingDir": "/srv"`) {
		t.Errorf("message does not match upstream's shape or lacks the diff:\n%s", msg)
	}
}

func TestFormatErrors(t *testing.T) {
	image := field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), "")
	port := field.Invalid(field.NewPath("spec", "containers").Index(0).Child("ports").Index(0).Child("containerPort"), 0, "must be\n  positive")
	tests := []struct {
		errs field.ErrorList
		want string
	}{
		{nil, ""},
		{field.ErrorList{image}, "spec.containers[0].image: Required value"},
		{field.ErrorList{image, port}, "[spec.containers[0].image: Required value, spec.containers[0].ports[0].containerPort: Invalid value: 0: must be positive]"},
	}
	for _, tc := range tests {
		if got := FormatErrors(tc.errs); got != tc.want {
			t.Errorf("FormatErrors(%v) = %q, want %q", tc.errs, got, tc.want)
		}
	}
}
