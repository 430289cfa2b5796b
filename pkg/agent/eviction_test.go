package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

func TestFiguresFromSummary(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	fs := &stats.FsStats{Time: at, AvailableBytes: u64(10), CapacityBytes: u64(100), InodesFree: u64(5), Inodes: u64(50)}
	s := &stats.Summary{Node: stats.NodeStats{
		Memory: &stats.MemoryStats{Time: at, AvailableBytes: u64(300), WorkingSetBytes: u64(700)},
		Fs:     fs, Runtime: &stats.RuntimeStats{ImageFs: fs, ContainerFs: fs},
		Rlimit: &stats.RlimitStats{Time: at, MaxPID: i64(1000), NumOfRunningProcesses: i64(400)},
	}}
	obs := eviction.MakeObservations(figures(s, nil))
	if o := obs[eviction.SignalMemoryAvailable]; o.Available != 300 || o.Capacity != 1000 || !o.Time.Equal(at.Time) {
		t.Errorf("memory %+v", o)
	}
	if o := obs[eviction.SignalNodeFsInodesFree]; o.Available != 5 || o.Capacity != 50 {
		t.Errorf("nodefs inodes %+v", o)
	}
	if o := obs[eviction.SignalImageFsAvailable]; o.Available != 10 || o.Capacity != 100 {
		t.Errorf("imagefs %+v", o)
	}
	if o := obs[eviction.SignalPIDAvailable]; o.Available != 600 || o.Capacity != 1000 {
		t.Errorf("pids %+v", o)
	}
	if _, ok := obs[eviction.SignalAllocatableMemoryAvailable]; ok {
		t.Error("allocatable observed without the kubepods figures")
	}
}

func TestEvictionPodsCarryTheirUsage(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "uid-a"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}}}}}}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "uid-b"}}
	s := &stats.Summary{Pods: []stats.PodStats{{
		PodRef: stats.PodReference{Name: "a", Namespace: "ns", UID: "uid-a"},
		Memory: &stats.MemoryStats{WorkingSetBytes: u64(42)},
		Containers: []stats.ContainerStats{{Name: "c", Memory: &stats.MemoryStats{WorkingSetBytes: u64(40)},
			Rootfs: &stats.FsStats{UsedBytes: u64(7)}, Logs: &stats.FsStats{UsedBytes: u64(3)}}},
		VolumeStats:      []stats.VolumeStats{{Name: "data", FsStats: stats.FsStats{UsedBytes: u64(5), InodesUsed: u64(2)}}},
		EphemeralStorage: &stats.FsStats{UsedBytes: u64(15)},
	}}}
	got := evictionPods([]*v1.Pod{pod, other}, s)
	if len(got) != 2 || got[0].Stats == nil || *got[0].Stats.MemoryWorkingSet != 42 || got[0].MemoryRequest.Value() != 10<<20 {
		t.Fatalf("pods %+v", got)
	}
	if c := got[0].Stats.Containers[0]; c.Name != "c" || *c.MemoryWorkingSet != 40 || *c.Rootfs.UsedBytes != 7 || *c.Logs.UsedBytes != 3 {
		t.Errorf("container %+v", c)
	}
	// The local storage checks read the summary's volumes and pod figure.
	if st := got[0].Stats; len(st.Volumes) != 1 || st.Volumes[0].Name != "data" || *st.Volumes[0].UsedBytes != 5 ||
		*st.Volumes[0].InodesUsed != 2 || st.EphemeralStorageUsed == nil || *st.EphemeralStorageUsed != 15 {
		t.Errorf("volumes %+v, ephemeral storage %v", st.Volumes, st.EphemeralStorageUsed)
	}
	if got[1].Stats != nil {
		t.Errorf("a pod without stats got %+v", got[1].Stats)
	}
}

func TestKubepodsMemory(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory/x/kubepods/memory.usage_in_bytes", "1000\n")
	write("memory/x/kubepods/memory.limit_in_bytes", "4000\n")
	write("memory/x/kubepods/memory.stat", "cache 500\ntotal_inactive_file 200\n")
	m, err := kubepodsMemory(root, "/x/kubepods", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.WorkingSet != 800 || m.Available != 3200 {
		t.Errorf("v1 %+v", m)
	}
	write("y/kubepods/memory.current", "1000\n")
	write("y/kubepods/memory.max", "max\n")
	write("y/kubepods/memory.stat", "anon 10\ninactive_file 100\n")
	if m, err = kubepodsMemory(root, "/y/kubepods", time.Now()); err != nil || m.WorkingSet != 900 {
		t.Errorf("v2 %+v %v", m, err)
	}
}

// Each pressure change is a Normal event on the node with the kubelet's
// reason and message; an unchanged set records nothing.
func TestPressureEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	changes := 0
	p := &pressure{}
	l := &evictionLoop{d: evictionDeps{recorder: rec, onChange: func() { changes++ }}, pressure: p, nodeName: "n1",
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	l.report([]v1.NodeConditionType{v1.NodeMemoryPressure})
	l.report([]v1.NodeConditionType{v1.NodeMemoryPressure})
	l.report(nil)
	want := []string{"Normal NodeHasInsufficientMemory Node n1 status is now: NodeHasInsufficientMemory",
		"Normal NodeHasSufficientMemory Node n1 status is now: NodeHasSufficientMemory"}
	for _, w := range want {
		if got := <-rec.Events; got != w {
			t.Errorf("event %q, want %q", got, w)
		}
	}
	if len(rec.Events) != 0 || changes != 2 {
		t.Errorf("extra events %d, changes %d", len(rec.Events), changes)
	}
	if len(p.Conditions()) != 0 {
		t.Errorf("conditions %v", p.Conditions())
	}
}

func TestEvictionStateCheckpoint(t *testing.T) {
	dir := t.TempDir()
	l := &evictionLoop{checkpoint: filepath.Join(dir, evictionCheckpoint), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.state = eviction.State{Conditions: []v1.NodeConditionType{v1.NodeDiskPressure},
		NodeConditionsLastObservedAt: map[v1.NodeConditionType]time.Time{v1.NodeDiskPressure: at}}
	l.save()
	st, err := loadEvictionState(l.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Conditions) != 1 || st.Conditions[0] != v1.NodeDiskPressure || !st.NodeConditionsLastObservedAt[v1.NodeDiskPressure].Equal(at) {
		t.Errorf("loaded %+v", st)
	}
	if st, err := loadEvictionState(filepath.Join(dir, "missing")); err != nil || st.Conditions != nil {
		t.Errorf("missing checkpoint: %+v %v", st, err)
	}
}

// The checkpoint's pressure is there before the eviction loop is built
// (node admission reads it from the first pod on); the loop built over
// it keeps the conditions and drops thresholds the policy no longer has.
func TestRestoredPressure(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if p := restoredPressure(dir, log); len(p.Conditions()) != 0 {
		t.Errorf("no checkpoint: %v", p.Conditions())
	}
	old, err := eviction.NewPolicy(eviction.Config{EvictionHard: map[string]string{"memory.available": "2Gi"}}, nil, eviction.Disks{}, true)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := &evictionLoop{checkpoint: filepath.Join(dir, evictionCheckpoint), log: log}
	l.state = eviction.State{Conditions: []v1.NodeConditionType{v1.NodeMemoryPressure}, ThresholdsMet: old.Thresholds,
		ThresholdsFirstObservedAt:    map[string]time.Time{old.Thresholds[0].Key(): at},
		NodeConditionsLastObservedAt: map[v1.NodeConditionType]time.Time{v1.NodeMemoryPressure: at}}
	l.save()
	p := restoredPressure(dir, log)
	if c := p.Conditions(); len(c) != 1 || c[0] != v1.NodeMemoryPressure {
		t.Errorf("restored %v", c)
	}
	relaxed, err := eviction.NewPolicy(eviction.Config{EvictionHard: map[string]string{"memory.available": "1Mi"}}, nil, eviction.Disks{}, true)
	if err != nil {
		t.Fatal(err)
	}
	loop := newEvictionLoop(relaxed, p, evictionDeps{}, "n1", dir, log)
	if len(loop.state.ThresholdsMet) != 0 || len(loop.state.ThresholdsFirstObservedAt) != 0 || !loop.state.NodeConditionsLastObservedAt[v1.NodeMemoryPressure].Equal(at) {
		t.Errorf("loop state %+v", loop.state)
	}
}
