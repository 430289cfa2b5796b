package podcgroup

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func res(req, lim v1.ResourceList) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: req, Limits: lim}
}

func podWith(init, apps []v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{}
	for i, r := range init {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "i" + string(rune('0'+i)), Resources: r})
	}
	for i, r := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: r})
	}
	return pod
}

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

// The cases of upstream's TestResourceConfigForPod
// (pkg/kubelet/cm/helpers_linux_test.go) and its pod-level resources
// variants, plus overhead, sidecars and podPidsLimit.
func TestForPod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	cases := []struct {
		name string
		pod  *v1.Pod
		opts Options
		want ResourceConfig
	}{{
		name: "besteffort",
		pod:  podWith(nil, []v1.ResourceRequirements{{}}),
		want: ResourceConfig{CPUShares: u64(MinShares)},
	}, {
		name: "burstable without limits",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), nil)}),
		want: ResourceConfig{CPUShares: u64(102)},
	}, {
		name: "burstable with limits",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))}),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 << 20)},
	}, {
		name: "burstable with limits, no cpu quota",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))}),
		opts: Options{NoCPUQuota: true},
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(200 << 20)},
	}, {
		name: "burstable with limits, tuned period",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))}),
		opts: Options{CPUPeriod: 5000},
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(1000), CPUPeriod: u64(5000), Memory: i64(200 << 20)},
	}, {
		name: "burstable with partial limits",
		pod: podWith(nil, []v1.ResourceRequirements{
			res(list("100m", "100Mi"), list("200m", "200Mi")),
			res(list("100m", "100Mi"), nil),
		}),
		want: ResourceConfig{CPUShares: u64(204)},
	}, {
		name: "burstable with one limit each",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", ""))}),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000)},
	}, {
		name: "burstable with an init container without limits",
		pod: podWith([]v1.ResourceRequirements{res(list("100m", "100Mi"), nil)},
			[]v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))}),
		want: ResourceConfig{CPUShares: u64(102)},
	}, {
		name: "guaranteed",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("100m", "100Mi"))}),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 << 20)},
	}, {
		name: "guaranteed, no cpu quota",
		pod:  podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("100m", "100Mi"))}),
		opts: Options{NoCPUQuota: true},
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(100 << 20)},
	}, {
		name: "guaranteed, a larger init container counts, not summed",
		pod: podWith([]v1.ResourceRequirements{res(list("500m", "300Mi"), list("500m", "300Mi"))},
			[]v1.ResourceRequirements{res(list("100m", "100Mi"), list("100m", "100Mi")), res(list("100m", "100Mi"), list("100m", "100Mi"))}),
		want: ResourceConfig{CPUShares: u64(512), CPUQuota: i64(50000), CPUPeriod: u64(100000), Memory: i64(300 << 20)},
	}, {
		name: "sidecar adds to the app containers",
		pod: func() *v1.Pod {
			p := podWith([]v1.ResourceRequirements{res(list("100m", "50Mi"), list("100m", "50Mi"))},
				[]v1.ResourceRequirements{res(list("200m", "100Mi"), list("200m", "100Mi"))})
			p.Spec.InitContainers[0].RestartPolicy = &always
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(307), CPUQuota: i64(30000), CPUPeriod: u64(100000), Memory: i64(150 << 20)},
	}, {
		name: "overhead added to requests and to the limits",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("100m", "100Mi"))})
			p.Spec.Overhead = list("10m", "10Mi")
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(112), CPUQuota: i64(11000), CPUPeriod: u64(100000), Memory: i64(110 << 20)},
	}, {
		name: "overhead of a burstable pod without limits: shares only",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), nil)})
			p.Spec.Overhead = list("10m", "10Mi")
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(112)},
	}, {
		name: "pod-level guaranteed, containers without resources",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{{}, {}})
			r := res(list("100m", "100Mi"), list("100m", "100Mi"))
			p.Spec.Resources = &r
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 << 20)},
	}, {
		name: "pod-level burstable limits replace the containers'",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{res(list("50m", "50Mi"), nil)})
			r := res(list("100m", "100Mi"), list("200m", "200Mi"))
			p.Spec.Resources = &r
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 << 20)},
	}, {
		name: "pod-level memory limit only",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{{}})
			r := res(list("100m", "100Mi"), list("", "200Mi"))
			p.Spec.Resources = &r
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(102), Memory: i64(200 << 20)},
	}, {
		name: "pod-level requests only",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{{}})
			r := res(list("100m", "100Mi"), nil)
			p.Spec.Resources = &r
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(102)},
	}, {
		name: "pod-level limits plus overhead",
		pod: func() *v1.Pod {
			p := podWith(nil, []v1.ResourceRequirements{{}})
			r := res(list("1", "1Gi"), list("1", "1Gi"))
			p.Spec.Resources = &r
			p.Spec.Overhead = list("100m", "64Mi")
			return p
		}(),
		want: ResourceConfig{CPUShares: u64(1126), CPUQuota: i64(110000), CPUPeriod: u64(100000), Memory: i64(1<<30 + 64<<20)},
	}, {
		name: "huge pages",
		pod: func() *v1.Pod {
			l := list("100m", "100Mi")
			l["hugepages-2Mi"] = resource.MustParse("6Mi")
			return podWith(nil, []v1.ResourceRequirements{res(l, l)})
		}(),
		want: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 << 20), HugePageLimit: map[int64]int64{2 << 20: 6 << 20}},
	}, {
		name: "podPidsLimit",
		pod:  podWith(nil, []v1.ResourceRequirements{{}}),
		opts: Options{PidsLimit: 1024},
		want: ResourceConfig{CPUShares: u64(MinShares), PidsLimit: i64(1024)},
	}, {
		name: "podPidsLimit -1 is unlimited",
		pod:  podWith(nil, []v1.ResourceRequirements{{}}),
		opts: Options{PidsLimit: -1},
		want: ResourceConfig{CPUShares: u64(MinShares)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want.HugePageLimit == nil {
				tc.want.HugePageLimit = map[int64]int64{}
			}
			got := ForPod(tc.pod, tc.opts)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ForPod =\n%s\nwant\n%s", show(got), show(tc.want))
			}
		})
	}
}

// The API's status.qosClass wins over the spec, as GetPodQOS has it.
func TestForPodFollowsStatusQOSClass(t *testing.T) {
	pod := podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("100m", "100Mi"))})
	pod.Status.QOSClass = v1.PodQOSBurstable
	got := ForPod(pod, Options{})
	want := ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 << 20), HugePageLimit: map[int64]int64{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForPod = %s, want %s", show(got), show(want))
	}
	pod.Status.QOSClass = v1.PodQOSBestEffort
	if got := ForPod(pod, Options{}); got.Memory != nil || *got.CPUShares != MinShares {
		t.Errorf("best-effort by status: %s", show(got))
	}
}

func show(rc ResourceConfig) string {
	s := ""
	if rc.CPUShares != nil {
		s += fmt.Sprintf("shares=%d ", *rc.CPUShares)
	}
	if rc.CPUQuota != nil {
		s += fmt.Sprintf("quota=%d ", *rc.CPUQuota)
	}
	if rc.CPUPeriod != nil {
		s += fmt.Sprintf("period=%d ", *rc.CPUPeriod)
	}
	if rc.Memory != nil {
		s += fmt.Sprintf("memory=%d ", *rc.Memory)
	}
	if rc.PidsLimit != nil {
		s += fmt.Sprintf("pids=%d ", *rc.PidsLimit)
	}
	return s + fmt.Sprintf("hugepages=%v", rc.HugePageLimit)
}
