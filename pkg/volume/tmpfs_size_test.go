package volume

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func withMemoryLimit(c v1.Container, q string) v1.Container {
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}
	return c
}

func TestMemoryVolumeSize(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	limited := testPod()
	limited.Spec.Containers = []v1.Container{
		withMemoryLimit(v1.Container{Name: "a"}, "100Mi"), withMemoryLimit(v1.Container{Name: "b"}, "28Mi"),
	}
	partly := testPod()
	partly.Spec.Containers = []v1.Container{withMemoryLimit(v1.Container{Name: "a"}, "100Mi"), {Name: "b"}}
	initNoLimit := limited.DeepCopy()
	initNoLimit.Spec.InitContainers = []v1.Container{{Name: "init"}}
	tests := []struct {
		name  string
		pod   *v1.Pod
		size  string
		alloc v1.ResourceList
		want  int64
	}{
		{"nothing known", testPod(), "", nil, 0},
		{"allocatable", testPod(), "", alloc, 1 << 30},
		{"pod limit below allocatable", limited, "", alloc, 128 << 20},
		{"sizeLimit lowest", limited, "16Mi", alloc, 16 << 20},
		{"sizeLimit above pod limit", limited, "512Mi", alloc, 128 << 20},
		{"sizeLimit above allocatable", testPod(), "2Gi", alloc, 1 << 30},
		{"one container without limit", partly, "", alloc, 1 << 30},
		{"init container without limit", initNoLimit, "", alloc, 1 << 30},
		{"no allocatable, sizeLimit", testPod(), "8Mi", nil, 8 << 20},
	}
	for _, tt := range tests {
		var sl *resource.Quantity
		if tt.size != "" {
			sl = ptr(resource.MustParse(tt.size))
		}
		if got := memoryVolumeSize(tt.pod, sl, tt.alloc); got != tt.want {
			t.Errorf("%s: size %d, want %d", tt.name, got, tt.want)
		}
	}
}
