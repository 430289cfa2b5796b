package podworker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func TestPlanGC(t *testing.T) {
	now := time.Unix(10_000, 0)
	at := func(s int) time.Time { return now.Add(time.Duration(s-100) * time.Second) }
	dead := func(id, uid, name, sb string, created int) GCContainer {
		return GCContainer{ID: id, PodUID: types.UID(uid), Name: name, SandboxID: sb, CreatedAt: at(created)}
	}
	runningC := func(id, uid, name, sb string, created int) GCContainer {
		c := dead(id, uid, name, sb, created)
		c.Running = true
		return c
	}
	sandbox := func(id, uid string, ready bool, created int) GCSandbox {
		return GCSandbox{ID: id, PodUID: types.UID(uid), Ready: ready, CreatedAt: at(created)}
	}
	// Pod "live" exists, "gone" is deleted, "done" terminated but not
	// deleted.
	states := map[types.UID]GCPodState{
		"gone": {RemoveContent: true, RemoveRuntime: true},
		"done": {RemoveRuntime: true},
	}
	pods := func(uid types.UID) GCPodState { return states[uid] }

	tests := []struct {
		name            string
		policy          GCPolicy
		containers      []GCContainer
		sandboxes       []GCSandbox
		logDirs         []string
		notReady        bool
		evictNonDeleted bool
		wantContainers  []string
		wantSandboxes   []string
		wantLogDirs     []string
	}{{
		name: "restarting container keeps its newest dead instance, oldest removed first",
		containers: []GCContainer{
			dead("c1", "live", "app", "s1", 10), dead("c3", "live", "app", "s1", 30),
			runningC("c4", "live", "app", "s1", 40), dead("c2", "live", "app", "s1", 20),
		},
		sandboxes:      []GCSandbox{sandbox("s1", "live", true, 1)},
		wantContainers: []string{"c1", "c2"},
	}, {
		name: "units are per pod and container name",
		containers: []GCContainer{
			dead("a1", "live", "a", "s1", 10), dead("b1", "live", "b", "s1", 11),
			dead("a2", "other", "a", "s2", 12),
		},
	}, {
		name:           "a running container is never collected",
		containers:     []GCContainer{runningC("c1", "live", "app", "s1", 10), runningC("c2", "live", "app", "s1", 20)},
		wantContainers: nil,
	}, {
		name:           "MinAge spares young dead containers",
		policy:         GCPolicy{MinAge: 50 * time.Second, MaxPerPodContainer: 0, MaxContainers: -1},
		containers:     []GCContainer{dead("old", "live", "app", "s1", 10), dead("young", "live", "app", "s1", 90)},
		wantContainers: []string{"old"},
	}, {
		name:           "negative MaxPerPodContainer keeps all",
		policy:         GCPolicy{MaxPerPodContainer: -1, MaxContainers: -1},
		containers:     []GCContainer{dead("c1", "live", "app", "s1", 10), dead("c2", "live", "app", "s1", 20)},
		wantContainers: nil,
	}, {
		name:   "MaxContainers evens out per unit, at least one each, then oldest first",
		policy: GCPolicy{MaxPerPodContainer: -1, MaxContainers: 1},
		containers: []GCContainer{
			dead("a1", "live", "a", "s1", 10), dead("a2", "live", "a", "s1", 20),
			dead("b1", "live", "b", "s1", 15),
		},
		// Per unit: one each (a1 goes); then two left for one: b1 (older) goes.
		wantContainers: []string{"a1", "b1"},
	}, {
		name: "deleted pod: every dead container and sandbox, and its log directory",
		containers: []GCContainer{
			dead("g1", "gone", "app", "gs1", 10), dead("g2", "gone", "app", "gs2", 20),
		},
		sandboxes:      []GCSandbox{sandbox("gs1", "gone", false, 5), sandbox("gs2", "gone", false, 15)},
		logDirs:        []string{"ns_web_gone", "ns_web_live", "not-a-pod-dir"},
		wantContainers: []string{"g1", "g2"},
		wantSandboxes:  []string{"gs1", "gs2"},
		wantLogDirs:    []string{"ns_web_gone"},
	}, {
		name:           "deleted pod while sources are not ready: only the per-unit limit, no log dirs",
		notReady:       true,
		containers:     []GCContainer{dead("g1", "gone", "app", "gs1", 10), dead("g2", "gone", "app", "gs1", 20)},
		sandboxes:      []GCSandbox{sandbox("gs1", "gone", false, 5)},
		logDirs:        []string{"ns_web_gone"},
		wantContainers: []string{"g1"},
	}, {
		name:           "deleted pod with a running container: running parts and log directory stay",
		containers:     []GCContainer{runningC("g1", "gone", "app", "gs1", 10), dead("g0", "gone", "app", "gs0", 5)},
		sandboxes:      []GCSandbox{sandbox("gs0", "gone", false, 1), sandbox("gs1", "gone", true, 6)},
		logDirs:        []string{"ns_web_gone"},
		wantContainers: []string{"g0"},
		wantSandboxes:  []string{"gs0"},
	}, {
		name: "live pod: sandboxes beyond the newest, unless ready or holding a container",
		containers: []GCContainer{
			dead("c1", "live", "app", "s2", 10),
		},
		sandboxes: []GCSandbox{
			sandbox("s1", "live", false, 1), sandbox("s2", "live", false, 2),
			sandbox("s3", "live", true, 3), sandbox("s4", "live", false, 4),
		},
		wantSandboxes: []string{"s1"},
	}, {
		name: "a sandbox whose only container is collected goes with it",
		containers: []GCContainer{
			dead("c1", "live", "app", "s1", 10), dead("c2", "live", "app", "s2", 20),
		},
		sandboxes:      []GCSandbox{sandbox("s1", "live", false, 1), sandbox("s2", "live", false, 2)},
		wantContainers: []string{"c1"},
		wantSandboxes:  []string{"s1"},
	}, {
		name:           "terminated pod not deleted: the newest dead container and sandbox stay",
		containers:     []GCContainer{dead("d1", "done", "app", "ds2", 10)},
		sandboxes:      []GCSandbox{sandbox("ds1", "done", false, 1), sandbox("ds2", "done", false, 2)},
		logDirs:        []string{"ns_job_done"},
		wantContainers: nil,
		wantSandboxes:  []string{"ds1"},
	}, {
		name:            "evictNonDeletedPods: a terminated pod loses everything but its log directory",
		evictNonDeleted: true,
		containers:      []GCContainer{dead("d1", "done", "app", "ds2", 10), dead("l1", "live", "app", "s1", 10)},
		sandboxes:       []GCSandbox{sandbox("ds1", "done", false, 1), sandbox("ds2", "done", false, 2), sandbox("s1", "live", false, 1)},
		logDirs:         []string{"ns_job_done"},
		wantContainers:  []string{"d1"},
		wantSandboxes:   []string{"ds1", "ds2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := tc.policy
			if policy == (GCPolicy{}) {
				policy = DefaultGCPolicy()
			}
			plan := PlanGC(GCInput{
				Policy: policy, Now: now, Containers: tc.containers, Sandboxes: tc.sandboxes, LogDirs: tc.logDirs,
				Pods: pods, AllSourcesReady: !tc.notReady, EvictNonDeletedPods: tc.evictNonDeleted,
			})
			var cs, ss []string
			for _, c := range plan.Containers {
				cs = append(cs, c.ID)
			}
			for _, s := range plan.Sandboxes {
				ss = append(ss, s.ID)
			}
			if !slices.Equal(cs, tc.wantContainers) || !slices.Equal(ss, tc.wantSandboxes) || !slices.Equal(plan.LogDirs, tc.wantLogDirs) {
				t.Errorf("plan %s\nwant containers=%v sandboxes=%v logDirs=%v", plan, tc.wantContainers, tc.wantSandboxes, tc.wantLogDirs)
			}
			if plan.Empty() != (len(cs)+len(ss)+len(plan.LogDirs) == 0) {
				t.Errorf("Empty() = %v for %s", plan.Empty(), plan)
			}
		})
	}
}

func TestDefaultGCPolicy(t *testing.T) {
	if p := DefaultGCPolicy(); p != (GCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}) {
		t.Errorf("DefaultGCPolicy() = %+v, want the kubelet's flag defaults", p)
	}
	if DefaultContainerGCPeriod != time.Minute {
		t.Errorf("DefaultContainerGCPeriod = %s", DefaultContainerGCPeriod)
	}
}

// GarbageCollect on the fake runtime: a pod the manager does not know
// (deleted while the agent was down) loses its dead containers, its
// sandbox and its log directory once the sources are ready; a known pod
// keeps its newest dead container and its log directory.
func TestGarbageCollectUnknownPod(t *testing.T) {
	ctx := context.Background()
	rt := critest.NewFakeRuntimeService()
	h := newManager(t, rt, critest.NewFakeImageService())
	ready := false
	h.m.cfg.SourcesReady = func() bool { return ready }
	gone := scenarioPod("gone", "busybox:1")
	mkDead := func(pod *v1.Pod, created int64) string {
		sb, err := rt.RunPodSandbox(ctx, &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace,
			Uid: string(pod.UID)}, Labels: runtime.SandboxLabels(pod)}, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := rt.CreateContainer(ctx, sb, &criv1.ContainerConfig{Metadata: &criv1.ContainerMetadata{Name: "c0"},
			Image: &criv1.ImageSpec{Image: "busybox:1"}, Labels: runtime.ContainerLabels(pod, &pod.Spec.Containers[0])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt.Lock()
		rt.Sandboxes[sb].State = criv1.PodSandboxState_SANDBOX_NOTREADY
		rt.Sandboxes[sb].CreatedAt = created
		rt.Containers[id].State = criv1.ContainerState_CONTAINER_EXITED
		rt.Containers[id].CreatedAt = created
		rt.Unlock()
		return id
	}
	mkDead(gone, 100)
	mkDead(gone, 200)
	goneLogs := runtime.PodLogsDir(h.logsDir, gone.Namespace, gone.Name, gone.UID)
	if err := os.MkdirAll(filepath.Join(goneLogs, "c0"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Before the sources are ready the pod may belong to one not heard
	// from: only the per-container limit applies.
	h.m.mu.Lock()
	h.m.seeded = true
	h.m.mu.Unlock()
	if err := h.m.GarbageCollect(ctx, false); err != nil {
		t.Fatal(err)
	}
	if sbs, cs := h.runtimeObjects(); len(cs) != 1 || len(sbs) != 1 {
		t.Errorf("sources not ready: left %v %v, want the newest dead container and its sandbox", sbs, cs)
	}
	if _, err := os.Stat(goneLogs); err != nil {
		t.Errorf("log directory removed before the sources are ready: %v", err)
	}
	ready = true
	if err := h.m.GarbageCollect(ctx, false); err != nil {
		t.Fatal(err)
	}
	if sbs, cs := h.runtimeObjects(); len(cs) != 0 || len(sbs) != 0 {
		t.Errorf("unknown pod: left %v %v, want nothing", sbs, cs)
	}
	if _, err := os.Stat(goneLogs); !os.IsNotExist(err) {
		t.Errorf("unknown pod's log directory: %v, want it removed", err)
	}
}
