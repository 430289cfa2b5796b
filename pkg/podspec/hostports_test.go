package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestHostPortsAndConflicts(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "init", Ports: []v1.ContainerPort{{HostPort: 1}}},
			{Name: "sidecar", RestartPolicy: &always, Ports: []v1.ContainerPort{{HostPort: 2, Protocol: v1.ProtocolUDP}}},
		},
		Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{
			{ContainerPort: 80}, {HostPort: 3, HostIP: "::"}, {HostPort: 4, HostIP: "10.0.0.1"},
		}}},
	}}
	got := HostPorts(pod)
	want := []HostPort{{"0.0.0.0", v1.ProtocolUDP, 2}, {"0.0.0.0", v1.ProtocolTCP, 3}, {"10.0.0.1", v1.ProtocolTCP, 4}}
	if len(got) != len(want) {
		t.Fatalf("HostPorts = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("HostPorts[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	for _, tc := range []struct {
		a, b HostPort
		want bool
	}{
		{HostPort{"0.0.0.0", "TCP", 80}, HostPort{"10.0.0.1", "TCP", 80}, true},
		{HostPort{"10.0.0.1", "TCP", 80}, HostPort{"10.0.0.1", "TCP", 80}, true},
		{HostPort{"10.0.0.1", "TCP", 80}, HostPort{"10.0.0.2", "TCP", 80}, false},
		{HostPort{"0.0.0.0", "TCP", 80}, HostPort{"0.0.0.0", "UDP", 80}, false},
		{HostPort{"0.0.0.0", "TCP", 80}, HostPort{"0.0.0.0", "TCP", 81}, false},
	} {
		if got := tc.a.Conflicts(tc.b); got != tc.want {
			t.Errorf("%v.Conflicts(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
