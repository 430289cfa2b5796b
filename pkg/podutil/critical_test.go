package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func prioPod(source string, priority *int32, class string) *v1.Pod {
	p := &v1.Pod{}
	if source != "" {
		p.Annotations = map[string]string{ConfigSourceAnnotation: source}
	}
	p.Spec.Priority, p.Spec.PriorityClassName = priority, class
	return p
}

func prio(v int32) *int32 { return &v }

// IsCriticalPod, IsNodeCriticalPod and Preemptable as upstream's
// pkg/kubelet/types/pod_update.go.
func TestCriticality(t *testing.T) {
	mirror := prioPod(SourceAPI, nil, "")
	mirror.Annotations[ConfigMirrorAnnotation] = "hash"
	for _, tc := range []struct {
		name               string
		pod                *v1.Pod
		critical, nodeCrit bool
	}{
		{"api pod without priority", prioPod(SourceAPI, nil, ""), false, false},
		{"api pod below the system range", prioPod(SourceAPI, prio(SystemCriticalPriority-1), ""), false, false},
		{"system-cluster-critical", prioPod(SourceAPI, prio(SystemCriticalPriority), "system-cluster-critical"), true, false},
		{"system-node-critical", prioPod(SourceAPI, prio(SystemCriticalPriority+1000), SystemNodeCritical), true, true},
		{"the class without the priority", prioPod(SourceAPI, nil, SystemNodeCritical), false, false},
		{"static pod", prioPod(SourceFile, nil, ""), true, false},
		{"static pod of the node-critical class", prioPod(SourceFile, nil, SystemNodeCritical), true, true},
		{"mirror pod", mirror, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsCritical(tc.pod); got != tc.critical {
				t.Errorf("IsCritical = %v, want %v", got, tc.critical)
			}
			if got := IsNodeCritical(tc.pod); got != tc.nodeCrit {
				t.Errorf("IsNodeCritical = %v, want %v", got, tc.nodeCrit)
			}
		})
	}
}

func TestPreemptable(t *testing.T) {
	static := func(p *int32) *v1.Pod { return prioPod(SourceFile, p, "") }
	api := func(p *int32) *v1.Pod { return prioPod(SourceAPI, p, "") }
	for _, tc := range []struct {
		name                 string
		preemptor, preemptee *v1.Pod
		want                 bool
	}{
		{"critical over a pod that is not", static(nil), api(prio(1e9)), true},
		{"critical over critical of lower priority", api(prio(SystemCriticalPriority + 1000)), api(prio(SystemCriticalPriority)), true},
		{"critical over critical of the same priority", static(prio(5)), static(prio(5)), false},
		{"critical over critical without priorities", static(nil), static(nil), false},
		{"static over static of lower priority", static(prio(100)), static(prio(10)), true},
		{"higher priority, neither critical", api(prio(10)), api(prio(5)), true},
		{"lower priority", api(prio(5)), api(prio(10)), false},
		{"one priority missing", api(prio(10)), api(nil), false},
		{"not critical over critical", api(prio(1e9)), static(prio(0)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Preemptable(tc.preemptor, tc.preemptee); got != tc.want {
				t.Errorf("Preemptable = %v, want %v", got, tc.want)
			}
		})
	}
}
