package eviction

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// As upstream's TestAdmitUnderNodeConditions.
func TestAdmit(t *testing.T) {
	bestEffort := apiPod("best-effort", 0, "", "")
	burstable := apiPod("burstable", 0, "100Mi", "")
	tolerant := apiPod("tolerant", 0, "", "")
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	diskTolerant := apiPod("disk-tolerant", 0, "", "")
	diskTolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	critical := apiPod("critical", 2000001000, "", "")
	memory := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeDiskPressure}
	both := []v1.NodeConditionType{v1.NodeDiskPressure, v1.NodeMemoryPressure}
	cases := []struct {
		name  string
		conds []v1.NodeConditionType
		pod   *v1.Pod
		msg   string // "" admitted
	}{
		{"no pressure", nil, bestEffort, ""},
		{"memory pressure, best effort", memory, bestEffort, "The node had condition: [MemoryPressure]. "},
		{"memory pressure, burstable", memory, burstable, ""},
		{"memory pressure, tolerates the taint", memory, tolerant, ""},
		{"memory pressure, tolerates another taint", memory, diskTolerant, "The node had condition: [MemoryPressure]. "},
		{"memory pressure, critical", memory, critical, ""},
		{"disk pressure refuses all", disk, burstable, "The node had condition: [DiskPressure]. "},
		{"disk pressure, tolerant of it still refused", disk, diskTolerant, "The node had condition: [DiskPressure]. "},
		{"both", both, tolerant, "The node had condition: [DiskPressure MemoryPressure]. "},
		{"disk pressure, critical", disk, critical, ""},
	}
	for _, tc := range cases {
		got := Admit(tc.conds, tc.pod)
		if tc.msg == "" {
			if !got.Admit {
				t.Errorf("%s: refused: %+v", tc.name, got)
			}
			continue
		}
		if got.Admit || got.Reason != "Evicted" || got.Message != tc.msg {
			t.Errorf("%s: %+v, want Evicted %q", tc.name, got, tc.msg)
		}
	}
}
