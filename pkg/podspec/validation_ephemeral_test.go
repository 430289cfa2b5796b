package podspec

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// debugContainer is what `kubectl debug --target=app` adds, defaulted.
func debugContainer(name string) v1.EphemeralContainer {
	ec := v1.EphemeralContainer{TargetContainerName: "app",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox:1", Command: []string{"sleep", "3600"}}}
	pod := &v1.Pod{Spec: v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{ec}}}
	SetDefaults(pod)
	return pod.Spec.EphemeralContainers[0]
}

func TestValidateEphemeralContainersUpdate(t *testing.T) {
	ec0 := func(path string) string { return "spec.ephemeralContainers[0]." + path }
	tests := []struct {
		name     string
		old, new func(p *v1.Pod)
		want     []string
	}{
		{name: "no change"},
		{name: "add one", new: func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debugger")} }},
		{name: "add a second, in any order",
			old: func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("one")} },
			new: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("two"), p.Spec.EphemeralContainers[0]}
			}},
		{name: "removal",
			old:  func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("one")} },
			new:  func(p *v1.Pod) { p.Spec.EphemeralContainers = nil },
			want: expectErrs(forbidden("spec.ephemeralContainers"))},
		{name: "change",
			old:  func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("one")} },
			new:  func(p *v1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:2" },
			want: expectErrs(forbidden("spec.ephemeralContainers"))},
		{name: "the new containers are validated",
			new: func(p *v1.Pod) {
				ec := debugContainer("app") // the regular container's name
				ec.Image, ec.TargetContainerName = "", "nope"
				ec.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}}
				ec.ReadinessProbe = &v1.Probe{}
				ec.Lifecycle = &v1.Lifecycle{}
				ec.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{ec}
			},
			want: expectErrs(required(ec0("image")), duplicate(ec0("name")), notFound(ec0("targetContainerName")),
				forbidden(ec0("ports")), forbidden(ec0("readinessProbe")), forbidden(ec0("lifecycle")), forbidden(ec0("resources")))},
		{name: "static pods",
			old: func(p *v1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
			},
			new:  func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("debugger")} },
			want: expectErrs(forbidden("[]"))}, // upstream's path, printed "[]"
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldPod := basePod()
			oldPod.ResourceVersion = "7"
			if tc.old != nil {
				tc.old(oldPod)
			}
			newPod := oldPod.DeepCopy()
			if tc.new != nil {
				tc.new(newPod)
			}
			errs := ValidateEphemeralContainersUpdate(newPod, oldPod)
			got, want := errStrings(errs), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q\n%s", got, want, FormatErrors(errs))
			}
		})
	}
}

func TestValidateEphemeralContainersUpdateMessages(t *testing.T) {
	oldPod := basePod()
	oldPod.ResourceVersion = "1"
	oldPod.Spec.EphemeralContainers = []v1.EphemeralContainer{debugContainer("one"), debugContainer("two")}
	newPod := oldPod.DeepCopy()
	newPod.Spec.EphemeralContainers = newPod.Spec.EphemeralContainers[1:]
	newPod.Spec.EphemeralContainers[0].Image = "busybox:2"
	errs := ValidateEphemeralContainersUpdate(newPod, oldPod)
	if len(errs) != 2 {
		t.Fatalf("want two errors, got %v", errs)
	}
	if got, want := errs[0].Error(), "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"one\" may not be removed\n"; got != want {
		t.Errorf("removal:\n got %q\nwant %q", got, want)
	}
	const changed = "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"two\" may not be changed\n"
	if got := errs[1].Error(); !strings.HasPrefix(got, changed) || !strings.Contains(got, "busybox:2") {
		t.Errorf("change: message lacks upstream's prefix or the diff:\n%s", got)
	}
}
