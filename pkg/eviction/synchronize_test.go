package eviction

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

const gi = int64(1) << 30

// memoryFigures: a 4Gi node with the given memory available, measured now.
func memoryFigures(now time.Time, available int64) Figures {
	return Figures{Memory: NodeMemory(now, uint64(4*gi), uint64(4*gi-available))}
}

func mustPolicy(t *testing.T, c Config, d Disks) Policy {
	t.Helper()
	p, err := NewPolicy(c, nil, d, true)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func memoryPods() []Pod {
	guaranteed := memPod("guaranteed", 0, "1Gi", "1Gi", mi(500))
	burstable := memPod("burstable", 0, "100Mi", "1Gi", mi(400))
	bestEffort := memPod("best-effort", 0, "", "", mi(200))
	critical := memPod("critical", 2000001000, "", "", mi(2000))
	grace := int64(30)
	bestEffort.TerminationGracePeriodSeconds = &grace
	return []Pod{guaranteed, critical, burstable, bestEffort}
}

// As upstream's TestMemoryPressure: soft threshold with its grace period,
// hard threshold, the transition period, admission all along.
func TestSynchronizeMemoryPressure(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := mustPolicy(t, Config{
		EvictionHard:              map[string]string{"memory.available": "1Gi"},
		EvictionSoft:              map[string]string{"memory.available": "2Gi"},
		EvictionSoftGracePeriod:   map[string]string{"memory.available": "2m"},
		EvictionMaxPodGracePeriod: 5,
	}, Disks{})
	var st State
	sync := func(available int64) Plan {
		var plan Plan
		plan, st = Synchronize(clock.Now(), pol, MakeObservations(memoryFigures(clock.Now(), available)), memoryPods(), st)
		return plan
	}
	bestEffort := apiPod("new-best-effort", 0, "", "")
	expect := func(step string, plan Plan, pressure bool, victim string, grace int64) {
		t.Helper()
		if got := HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure); got != pressure {
			t.Errorf("%s: MemoryPressure %v, want %v (%s)", step, got, pressure, plan)
		}
		if !slices.Equal(plan.Conditions, st.Conditions) {
			t.Errorf("%s: plan conditions %v, state %v", step, plan.Conditions, st.Conditions)
		}
		if a := Admit(st.Conditions, bestEffort); a.Admit == pressure {
			t.Errorf("%s: best effort admission %+v under pressure %v", step, a, pressure)
		}
		switch {
		case victim == "" && plan.Evict != nil:
			t.Errorf("%s: evicted %s", step, plan.Evict.Name)
		case victim != "" && (plan.Evict == nil || plan.Evict.Name != victim || plan.Evict.GracePeriodSeconds != grace):
			t.Errorf("%s: evict %+v, want %s with grace %d", step, plan.Evict, victim, grace)
		}
	}

	expect("no pressure", sync(3*gi), false, "", 0)

	expect("soft threshold met, grace period running", sync(1500<<20), true, "", 0)
	clock.Step(time.Minute)
	expect("soft threshold one minute in", sync(1500<<20), true, "", 0)

	clock.Step(90 * time.Second)
	plan := sync(1500 << 20)
	// Ranked: burstable (over its request), best-effort (over its none),
	// the critical pod skipped, guaranteed last. Soft: min(5, 30 or none).
	expect("soft grace period passed", plan, true, "burstable", 5)
	if plan.Signal != SignalMemoryAvailable || plan.Evict.Signal != "memory.available" || len(plan.Reclaim) != 0 {
		t.Errorf("plan %s: signal %s, reclaim %v", plan, plan.Signal, plan.Reclaim)
	}
	if plan.NodeEvent == nil || plan.NodeEvent.Reason != "EvictionThresholdMet" || plan.NodeEvent.Message != "Attempting to reclaim memory" {
		t.Errorf("node event %+v", plan.NodeEvent)
	}
	want := "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. Container burstable was using 400Mi, request is 100Mi, has larger consumption of memory. "
	if c := plan.Evict.Condition; plan.Evict.Message != want || c == nil || c.Type != v1.DisruptionTarget || c.Reason != "TerminationByKubelet" || c.Message != want || c.Status != v1.ConditionTrue {
		t.Errorf("message %q condition %+v", plan.Evict.Message, plan.Evict.Condition)
	}
	if !plan.StatsAge[SignalMemoryAvailable].Equal(clock.Now()) {
		t.Errorf("stats age %v", plan.StatsAge)
	}

	clock.Step(time.Minute)
	expect("pressure gone, transition period", sync(3*gi), true, "", 0)

	clock.Step(time.Minute)
	expect("hard threshold", sync(500<<20), true, "burstable", 1)

	clock.Step(time.Minute)
	expect("relieved", sync(3*gi), true, "", 0)
	clock.Step(3*time.Minute + 59*time.Second) // 4m59s since last met
	expect("just inside the transition period", sync(3*gi), true, "", 0)
	clock.Step(time.Second)
	expect("transition period over", sync(3*gi), false, "", 0)
}

func TestSynchronizeSoftGraceIsCappedByThePod(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{
		EvictionHard: map[string]string{},
		EvictionSoft: map[string]string{"memory.available": "2Gi"}, EvictionSoftGracePeriod: map[string]string{"memory.available": "0s"},
		EvictionMaxPodGracePeriod: 60,
	}, Disks{})
	pods := memoryPods()[3:] // best-effort, terminationGracePeriodSeconds 30
	plan, _ := Synchronize(now, pol, MakeObservations(memoryFigures(now, gi)), pods, State{})
	// A 0s grace period is a hard threshold, as the kubelet's isHardEvictionThreshold.
	if plan.Evict == nil || plan.Evict.GracePeriodSeconds != 1 {
		t.Fatalf("0s soft: %+v", plan.Evict)
	}
	pol.Thresholds[0].GracePeriod = time.Second
	var st State
	_, st = Synchronize(now, pol, MakeObservations(memoryFigures(now, gi)), pods, st)
	later := now.Add(time.Second)
	plan, _ = Synchronize(later, pol, MakeObservations(memoryFigures(later, gi)), pods, st)
	if plan.Evict == nil || plan.Evict.GracePeriodSeconds != 30 {
		t.Fatalf("soft, pod's 30s under the 60s max: %+v", plan.Evict)
	}
}

func TestSynchronizeNeverEvictsCriticalPods(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{EvictionHard: map[string]string{"memory.available": "1Gi"}}, Disks{})
	pods := memoryPods()[1:2]
	plan, st := Synchronize(now, pol, MakeObservations(memoryFigures(now, 100<<20)), pods, State{})
	if plan.Evict != nil || !HasNodeCondition(st.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("critical only: %s", plan)
	}
	static := PodFromAPI(func() *v1.Pod {
		p := apiPod("static", 0, "", "")
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		return p
	}())
	if !static.Critical {
		t.Error("a static pod is critical")
	}
	plan, _ = Synchronize(now, pol, MakeObservations(memoryFigures(now, 100<<20)), nil, State{})
	if plan.Evict != nil || plan.Signal != SignalMemoryAvailable {
		t.Errorf("no pods: %s", plan)
	}
}

// Stats not refreshed since the last sync do not evict a second pod.
func TestSynchronizeStaleStats(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{EvictionHard: map[string]string{"memory.available": "1Gi"}}, Disks{})
	obs := MakeObservations(memoryFigures(now, 100<<20))
	plan, st := Synchronize(now, pol, obs, memoryPods(), State{})
	if plan.Evict == nil {
		t.Fatal("no eviction")
	}
	plan, _ = Synchronize(now.Add(10*time.Second), pol, obs, memoryPods(), st)
	if plan.Evict != nil || plan.Signal != "" || !HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("stale stats: %s", plan)
	}
}

func diskFigures(now time.Time, available int64) Figures {
	return Figures{NodeFs: &FsFigures{Time: now, Available: uint64(available), Capacity: uint64(100 * gi), InodesFree: u64(1e6), Inodes: u64(2e6)}}
}

// As upstream's TestDiskPressureNodeFs and TestNodeReclaimFuncs: reclaim
// first, evict only if reclaim did not free the minimum; the threshold
// stays met until the minimum reclaim is back.
func TestSynchronizeDiskPressureReclaim(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pol := mustPolicy(t, Config{
		EvictionHard:           map[string]string{"nodefs.available": "1Gi"},
		EvictionMinimumReclaim: map[string]string{"nodefs.available": "500Mi"},
	}, Disks{})
	pods := []Pod{diskPod("small", 0, "", mi(1), mi(1), mi(1)), diskPod("big", 0, "", mi(500), mi(100), mi(100))}
	plan, st := Synchronize(clock.Now(), pol, MakeObservations(diskFigures(clock.Now(), 512<<20)), pods, State{})
	if !slices.Equal(plan.Reclaim, []ReclaimStep{DeleteAllUnusedContainers, DeleteUnusedImages}) || plan.Resource != v1.ResourceEphemeralStorage {
		t.Fatalf("reclaim %v resource %s", plan.Reclaim, plan.Resource)
	}
	if !HasNodeCondition(plan.Conditions, v1.NodeDiskPressure) || HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("conditions %v", plan.Conditions)
	}
	if plan.Evict == nil || plan.Evict.Name != "big" || plan.Evict.GracePeriodSeconds != 1 {
		t.Fatalf("victim if reclaim falls short: %+v", plan.Evict)
	}
	if ReclaimSufficed(pol, MakeObservations(diskFigures(clock.Now(), 1200<<20))) {
		t.Error("1200Mi free is under 1Gi + 500Mi minimum reclaim")
	}
	if !ReclaimSufficed(pol, MakeObservations(diskFigures(clock.Now(), 2*gi))) {
		t.Error("2Gi free satisfies the minimum reclaim")
	}
	// Above the threshold but not yet its minimum reclaim: still met.
	clock.Step(10 * time.Second)
	plan, st = Synchronize(clock.Now(), pol, MakeObservations(diskFigures(clock.Now(), 1200<<20)), pods, st)
	if plan.Evict == nil || !HasNodeCondition(plan.Conditions, v1.NodeDiskPressure) {
		t.Errorf("minimum reclaim not met: %s", plan)
	}
	clock.Step(10 * time.Second)
	plan, _ = Synchronize(clock.Now(), pol, MakeObservations(diskFigures(clock.Now(), 2*gi)), pods, st)
	if plan.Evict != nil || len(plan.Reclaim) != 0 || !HasNodeCondition(plan.Conditions, v1.NodeDiskPressure) {
		t.Errorf("reclaimed, in the transition period: %s", plan)
	}
}

func TestReclaimSteps(t *testing.T) {
	for _, tc := range []struct {
		d               Disks
		nodefs, imagefs []ReclaimStep
	}{
		{Disks{}, []ReclaimStep{DeleteAllUnusedContainers, DeleteUnusedImages}, []ReclaimStep{DeleteAllUnusedContainers, DeleteUnusedImages}},
		{Disks{DedicatedImageFs: true}, nil, []ReclaimStep{DeleteAllUnusedContainers, DeleteUnusedImages}},
		{Disks{DedicatedImageFs: true, SplitContainerImageFs: true}, []ReclaimStep{DeleteAllUnusedContainers}, []ReclaimStep{DeleteUnusedImages}},
	} {
		m := reclaimSteps(tc.d)
		if !slices.Equal(m[SignalNodeFsAvailable], tc.nodefs) || !slices.Equal(m[SignalImageFsInodesFree], tc.imagefs) || m[SignalMemoryAvailable] != nil {
			t.Errorf("%+v: nodefs %v imagefs %v", tc.d, m[SignalNodeFsAvailable], m[SignalImageFsInodesFree])
		}
	}
}

func TestSynchronizePIDPressure(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{EvictionHard: map[string]string{"pid.available": "10%"}}, Disks{})
	mk := func(name string, procs int64) Pod {
		p := PodFromAPI(apiPod(name, 0, "", ""))
		p.Stats = &PodStats{Processes: u64(procs)}
		return p
	}
	obs := MakeObservations(Figures{Rlimit: &RlimitFigures{Time: now, MaxPID: 1000, Running: 950}})
	if o := obs[SignalPIDAvailable]; o.Available != 50 || o.Capacity != 1000 {
		t.Fatalf("pid.available %+v", o)
	}
	plan, _ := Synchronize(now, pol, obs, []Pod{mk("few", 3), mk("forky", 800)}, State{})
	if !HasNodeCondition(plan.Conditions, v1.NodePIDPressure) || plan.Evict == nil || plan.Evict.Name != "forky" ||
		plan.Evict.Message != "The node was low on resource: pids. Threshold quantity: 100, available: 50. " {
		t.Errorf("pid pressure: %s %+v", plan, plan.Evict)
	}
}

// Memory is reclaimed before disk when both are short.
func TestSynchronizeMemoryBeforeDisk(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{}, Disks{}) // the kubelet's defaults
	f := diskFigures(now, gi)               // under 10% of 100Gi
	f.Memory = memoryFigures(now, 50<<20).Memory
	plan, _ := Synchronize(now, pol, MakeObservations(f), memoryPods(), State{})
	if plan.Signal != SignalMemoryAvailable || len(plan.Conditions) != 2 {
		t.Errorf("%s", plan)
	}
}

// As upstream's TestLocalStorageEviction* cases.
func TestSynchronizeLocalStorage(t *testing.T) {
	now := time.Now()
	pol := mustPolicy(t, Config{}, Disks{})
	withDir := func() *v1.Pod {
		p := apiPod("dir", 0, "", "")
		limit := resourceMust("1Mi")
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
		return p
	}
	dir := PodFromAPI(withDir())
	dir.Stats = &PodStats{Volumes: []VolumeStats{{Name: "data", FsUsage: FsUsage{UsedBytes: u64(mi(2))}}}}
	limited := func(name string) *v1.Pod {
		p := apiPod(name, 0, "", "")
		p.Spec.Containers[0].Resources.Limits[v1.ResourceEphemeralStorage] = resourceMust("10Mi")
		return p
	}
	pod := PodFromAPI(limited("pod"))
	pod.Stats = &PodStats{EphemeralStorageUsed: u64(mi(11)), Containers: []ContainerStats{{Name: "pod", Logs: &FsUsage{UsedBytes: u64(mi(1))}}}}
	ctr := PodFromAPI(limited("ctr"))
	ctr.EphemeralStorageLimit = nil // as if another container had no limit
	ctr.Stats = &PodStats{Containers: []ContainerStats{{Name: "ctr", Rootfs: &FsUsage{UsedBytes: u64(mi(8))}, Logs: &FsUsage{UsedBytes: u64(mi(3))}}}}
	fine := PodFromAPI(limited("fine"))
	fine.Stats = &PodStats{EphemeralStorageUsed: u64(mi(9))}
	crit := PodFromAPI(withDir())
	crit.Name, crit.Critical, crit.Stats = "critical", true, dir.Stats

	plan, _ := Synchronize(now, pol, MakeObservations(memoryFigures(now, 50<<20)), []Pod{dir, pod, ctr, fine, crit}, State{})
	want := []Victim{
		{Name: "dir", Message: `Usage of EmptyDir volume "data" exceeds the limit "1Mi". `, Signal: "emptydirfs.limit"},
		{Name: "pod", Message: "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ", Signal: "ephemeralpodfs.limit"},
		{Name: "ctr", Message: `Container ctr exceeded its local ephemeral storage limit "10Mi". `, Signal: "ephemeralcontainerfs.limit"},
	}
	if len(plan.LocalStorage) != len(want) {
		t.Fatalf("local storage victims %+v", plan.LocalStorage)
	}
	for i, v := range plan.LocalStorage {
		if v.Name != want[i].Name || v.Message != want[i].Message || v.Signal != want[i].Signal || v.GracePeriodSeconds != 1 || v.Condition != nil {
			t.Errorf("victim %d: %+v, want %+v", i, v, want[i])
		}
	}
	// The memory threshold waits for the next sync, as the kubelet's.
	if plan.Evict != nil || !HasNodeCondition(plan.Conditions, v1.NodeMemoryPressure) {
		t.Errorf("threshold eviction alongside local storage: %s", plan)
	}
	// localStorageCapacityIsolation: false: no local storage victims,
	// the memory threshold acts at once.
	off, err := NewPolicy(Config{}, nil, Disks{}, false)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ = Synchronize(now, off, MakeObservations(memoryFigures(now, 50<<20)), []Pod{dir, pod, ctr, fine, crit}, State{})
	if len(plan.LocalStorage) != 0 || plan.Evict == nil {
		t.Errorf("without local storage isolation: %s, local storage %+v", plan, plan.LocalStorage)
	}
	// With the writable layer on a dedicated image filesystem, only logs count.
	if _, _, over := overLocalLimit(&ctr, Disks{DedicatedImageFs: true}); over {
		t.Error("rootfs counted on a dedicated imagefs")
	}
}
