package eviction

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// As upstream's TestOrderedByExceedsRequestMemory, TestOrderedByPriority
// and TestOrderedByMemory/TestOrderedByPriorityMemory.
func TestRankMemoryPressure(t *testing.T) {
	pods := []Pod{
		memPod("guaranteed-low", 0, "1Gi", "1Gi", mi(100)),
		memPod("burstable-below", 0, "100Mi", "1Gi", mi(50)),
		memPod("best-effort-high-priority", 10, "", "", mi(100)),
		memPod("best-effort", 0, "", "", mi(100)),
		memPod("burstable-above", 0, "100Mi", "1Gi", mi(400)),
		memPod("guaranteed-high", 0, "1Gi", "1Gi", mi(1000)),
		memPod("burstable-far-above", 0, "100Mi", "1Gi", mi(800)),
	}
	noStats := PodFromAPI(apiPod("no-stats", 100, "1Gi", "1Gi"))
	pods = append(pods, noStats)
	ranked := ptrs(pods)
	rankMemoryPressure(ranked)
	want := []string{
		// No stats first; then over their request, by priority, by usage above request.
		"no-stats", "burstable-far-above", "burstable-above", "best-effort",
		"best-effort-high-priority",
		// Within their request: usage minus request (-24Mi, -50Mi, -924Mi).
		"guaranteed-high", "burstable-below", "guaranteed-low",
	}
	if got := names(ranked); !slices.Equal(got, want) {
		t.Errorf("ranked %v\nwant   %v", got, want)
	}
}

// As upstream's TestOrderedbyDisk and TestOrderedbyPriorityDisk: usage is
// rootfs + logs + local volumes, above the ephemeral-storage request.
func TestRankDiskPressure(t *testing.T) {
	pods := []Pod{
		diskPod("best-effort-high", 0, "", mi(50), mi(100), mi(50)),    // 200Mi
		diskPod("best-effort-low", 0, "", mi(100), mi(150), mi(50)),    // 300Mi
		diskPod("burstable-high", 0, "50Mi", mi(200), mi(150), mi(50)), // 400Mi
		diskPod("burstable-low", 0, "1Gi", mi(300), mi(100), mi(50)),   // 450Mi, under request
		diskPod("priority", 5, "", mi(500), mi(100), mi(50)),           // 650Mi, higher priority
	}
	all := fsStats{root: true, logs: true, localVolumes: true}
	for _, r := range []v1.ResourceName{v1.ResourceEphemeralStorage, resourceInodes} {
		ranked := ptrs(slices.Clone(pods))
		rankDiskPressure(all, r)(ranked)
		want := []string{"burstable-high", "best-effort-low", "best-effort-high", "priority", "burstable-low"}
		if r == resourceInodes {
			// Inode requests are none: every pod exceeds, so priority comes
			// first; the kubelet still subtracts the ephemeral-storage
			// request from the count.
			want = []string{"burstable-high", "best-effort-low", "best-effort-high", "burstable-low", "priority"}
		}
		if got := names(ranked); !slices.Equal(got, want) {
			t.Errorf("%s: ranked %v\nwant   %v", r, got, want)
		}
	}
	// With a dedicated image filesystem, nodefs counts logs and volumes only.
	ranked := ptrs(slices.Clone(pods[:2]))
	rankFuncs(Disks{DedicatedImageFs: true})[SignalNodeFsAvailable](ranked)
	if got := names(ranked); !slices.Equal(got, []string{"best-effort-low", "best-effort-high"}) {
		t.Errorf("nodefs with imagefs: %v", got)
	}
}

func TestRankPIDPressure(t *testing.T) {
	mk := func(name string, priority int32, procs int64) Pod {
		p := PodFromAPI(apiPod(name, priority, "", ""))
		p.Stats = &PodStats{Processes: u64(procs)}
		return p
	}
	ranked := ptrs([]Pod{mk("few", 0, 5), mk("important", 10, 500), mk("many", 0, 50)})
	rankPIDPressure(ranked)
	if got := names(ranked); !slices.Equal(got, []string{"many", "few", "important"}) {
		t.Errorf("ranked %v", got)
	}
}
