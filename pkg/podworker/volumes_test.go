package podworker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/volume"
)

// flakyVolumes fails SetUpPod until fail reaches 0.
type flakyVolumes struct {
	mu    sync.Mutex
	fail  int
	calls []time.Time
}

func (f *flakyVolumes) SetUpPod(_ context.Context, pod *v1.Pod, _ []string) (map[string]volume.Mounted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	if f.fail > 0 {
		f.fail--
		return nil, &volume.SetUpError{Failed: []string{"data"}, Messages: map[string]string{"data": `MountVolume.SetUp failed for volume "data" : not yet`}}
	}
	return map[string]volume.Mounted{"data": {HostPath: "/srv/data"}}, nil
}

func (f *flakyVolumes) TearDownPod(types.UID) error             { return nil }
func (f *flakyVolumes) CleanupOrphans(map[types.UID]bool) error { return nil }
func (f *flakyVolumes) state() (int, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail, append([]time.Time(nil), f.calls...)
}

// A pod whose volumes fail to set up waits in ContainerCreating, is
// retried with back-off (not every retry period), and starts once the
// volumes are there.
func TestVolumeSetUpIsRetriedWithBackoff(t *testing.T) {
	h := newManager(t, critest.NewFakeRuntimeService(), critest.NewFakeImageService())
	vols := &flakyVolumes{fail: 3}
	h.m.cfg.Volumes = vols
	h.start(t)
	pod := scenarioPod("vols", "busybox:1")
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	h.pods <- []*v1.Pod{pod}
	eventually(t, "the container running after the volumes came", func() (bool, string) {
		p := h.pod(pod.UID)
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false, "no status"
		}
		return p.Status.ContainerStatuses[0].State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
	})
	// The retry period is 20 ms; the back-off spaces the attempts by at
	// least 0.5 s, 1 s and 2 s (lower bounds: a slow machine only widens
	// them).
	fail, calls := vols.state()
	if fail != 0 || len(calls) < 4 {
		t.Fatalf("%d attempts, %d failures left", len(calls), fail)
	}
	for i, min := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if gap := calls[i+1].Sub(calls[i]); gap < min-50*time.Millisecond {
			t.Errorf("attempt %d came %s after the previous failure, want at least %s", i+2, gap, min)
		}
	}
}
