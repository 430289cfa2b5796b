package scheduler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// node builds a Ready node with cpu (e.g. "2"), memory and 110 pods.
func node(name, cpu, mem string, mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{
				v1.ResourceCPU:              resource.MustParse(cpu),
				v1.ResourceMemory:           resource.MustParse(mem),
				v1.ResourcePods:             resource.MustParse("110"),
				v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

// pod builds a one-container pod requesting cpu and memory ("" for none).
func pod(name, cpu, mem string, mutate ...func(*v1.Pod)) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{
			SchedulerName: v1.DefaultSchedulerName,
			Containers:    []v1.Container{{Name: "c", Image: "img", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withTaints(ts ...v1.Taint) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

func withLabels(kv ...string) func(*v1.Node) {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTolerations(ts ...v1.Toleration) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

func withPodLabels(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withHostPort(ip string, port int32, proto v1.Protocol) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto})
	}
}

func onNode(name string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = name } }

func ownedBy(uid string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID(uid), Controller: &yes}}
	}
}

func hostnameTerm(kv ...string) v1.PodAffinityTerm {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: m}, TopologyKey: v1.LabelHostname}
}

func withAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func withAntiAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

var (
	notReadyTaint = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	notReady      = func(n *v1.Node) {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	}
)
