package podcgroup

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestPlanQOS(t *testing.T) {
	burstable := podWith(nil, []v1.ResourceRequirements{res(list("250m", ""), nil), res(list("100m", "64Mi"), nil)})
	withOverhead := podWith(nil, []v1.ResourceRequirements{res(list("100m", ""), list("200m", ""))})
	withOverhead.Spec.Overhead = list("50m", "")
	guaranteed := podWith(nil, []v1.ResourceRequirements{res(list("1", "1Gi"), list("1", "1Gi"))})
	bestEffort := podWith(nil, []v1.ResourceRequirements{{}})
	cases := []struct {
		name   string
		pods   []*v1.Pod
		shares uint64
	}{
		{"no pods", nil, MinShares},
		{"only guaranteed and best effort", []*v1.Pod{guaranteed, bestEffort}, MinShares},
		{"burstable requests summed, overhead counted", []*v1.Pod{burstable, withOverhead, guaranteed}, MilliCPUToShares(500)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanQOS(tc.pods, []int64{2 << 20})
			if got := *p.Burstable.CPUShares; got != tc.shares {
				t.Errorf("burstable shares %d, want %d", got, tc.shares)
			}
			if got := *p.BestEffort.CPUShares; got != MinShares {
				t.Errorf("best effort shares %d, want %d", got, MinShares)
			}
			for _, rc := range []ResourceConfig{p.Burstable, p.BestEffort} {
				if rc.Memory != nil || rc.CPUQuota != nil || rc.PidsLimit != nil {
					t.Errorf("QoS tier limited beyond cpu shares: %+v", rc)
				}
				if rc.HugePageLimit[2<<20] != 1<<62 {
					t.Errorf("huge pages %v, want unbounded", rc.HugePageLimit)
				}
			}
		})
	}
}

// The manager's pods size the Burstable tier: a new pod and a changed
// request rewrite it before the pod cgroup, a forgotten pod after; an
// unchanged pod only once the period has passed.
func TestManagerUpdatesQOSTiers(t *testing.T) {
	for _, v := range []struct {
		name      string
		fake      func(*testing.T) string
		burstable string
		value     func(shares uint64) string
	}{
		{"v1", fakeV1, "cpu/nodeagent/kubepods/burstable/cpu.shares", func(s uint64) string { return strconv.FormatUint(s, 10) }},
		{"v2", fakeV2, "nodeagent/kubepods/burstable/cpu.weight", func(s uint64) string { return strconv.FormatUint(SharesToWeight(s), 10) }},
	} {
		t.Run(v.name, func(t *testing.T) {
			root := v.fake(t)
			now := time.Unix(1000, 0)
			m := NewManager(root, Options{QOS: &QOSCgroups{Kubepods: "/nodeagent/kubepods"}, Now: func() time.Time { return now }})
			path := filepath.Join(root, v.burstable)
			pod := podWith(nil, []v1.ResourceRequirements{res(list("300m", ""), nil)})
			if err := m.Ensure(podName, pod); err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, path), v.value(MilliCPUToShares(300)); got != want {
				t.Errorf("burstable = %q after the pod came, want %q", got, want)
			}
			bestEffort := filepath.Join(root, "cpu/nodeagent/kubepods/besteffort/cpu.shares")
			want := "2"
			if v.name == "v2" {
				bestEffort, want = filepath.Join(root, "nodeagent/kubepods/besteffort/cpu.weight"), "1"
			}
			if got := read(t, bestEffort); got != want {
				t.Errorf("best effort = %q, want %q", got, want)
			}
			write(t, path, "sentinel")
			if err := m.Ensure(podName, pod); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); got != "sentinel" {
				t.Errorf("burstable rewritten within the period: %q", got)
			}
			now = now.Add(QOSPeriod)
			if err := m.Ensure(podName, pod); err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, path), v.value(MilliCPUToShares(300)); got != want {
				t.Errorf("burstable = %q after the period, want %q", got, want)
			}
			pod.Spec.Containers[0].Resources.Requests = list("700m", "")
			if err := m.Ensure(podName, pod); err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, path), v.value(MilliCPUToShares(700)); got != want {
				t.Errorf("burstable = %q after a resize, want %q", got, want)
			}
			m.Forget(podName)
			if got, want := read(t, path), v.value(MinShares); got != want {
				t.Errorf("burstable = %q after the pod went, want %q", got, want)
			}
		})
	}
}

// RunQOS puts a changed tier back within a period, with no pod syncing,
// as the kubelet's periodic UpdateCgroups.
func TestRunQOSRewritesTiers(t *testing.T) {
	root := fakeV1(t)
	m := NewManager(root, Options{QOS: &QOSCgroups{Kubepods: "/nodeagent/kubepods"}, QOSPeriod: 10 * time.Millisecond})
	pod := podWith(nil, []v1.ResourceRequirements{res(list("300m", ""), nil)})
	if err := m.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "cpu/nodeagent/kubepods/burstable/cpu.shares")
	write(t, path, "sentinel")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.RunQOS(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	want := strconv.FormatUint(MilliCPUToShares(300), 10)
	deadline := time.Now().Add(30 * time.Second)
	for read(t, path) != want {
		if time.Now().After(deadline) {
			t.Fatalf("burstable = %q, want %q put back", read(t, path), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
