package objectmanager

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeAPI is a fake clientset whose watches are fake watchers the test
// drives, so that what a watch delivers does not race with its start.
type fakeAPI struct {
	cs      *fake.Clientset
	watches chan *watch.FakeWatcher
}

func newFakeAPI(objs ...runtime.Object) *fakeAPI {
	f := &fakeAPI{cs: fake.NewClientset(objs...), watches: make(chan *watch.FakeWatcher, 16)}
	f.cs.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		f.watches <- w
		return true, w, nil
	})
	return f
}

// nextWatch is the next watch the manager opened.
func (f *fakeAPI) nextWatch(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-f.watches:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("no watch was opened")
		return nil
	}
}

// noWatch checks that no watch is open or being opened beyond those taken.
func (f *fakeAPI) noWatch(t *testing.T) {
	t.Helper()
	select {
	case <-f.watches:
		t.Fatal("a watch was opened")
	default:
	}
}

// calls are the recorded requests of a verb on a resource.
func (f *fakeAPI) calls(verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// listSelectors are the field selectors of the lists of resource.
func (f *fakeAPI) listSelectors(resource string) []string {
	var out []string
	for _, a := range f.calls("list", resource) {
		out = append(out, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
	}
	return out
}

// waitStopped waits for the reflector to stop the watcher.
func waitStopped(t *testing.T, w *watch.FakeWatcher) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !w.IsStopped() {
		if time.Now().After(deadline) {
			t.Fatal("the watch was not stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond until it holds (a generous bound, not a threshold).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func configMap(name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "1"}, Data: map[string]string{"k": value}}
}

// podWith is a pod in ns referring to config maps through volumes and env,
// and to secrets as image pull secrets.
func podWith(uid string, volumeCMs, envCMs, pullSecrets []string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-" + uid, UID: types.UID(uid)}}
	for _, n := range volumeCMs {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{
			ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: n}}}})
	}
	c := v1.Container{Name: "c"}
	for _, n := range envCMs {
		c.EnvFrom = append(c.EnvFrom, v1.EnvFromSource{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: n}}})
	}
	p.Spec.Containers = []v1.Container{c}
	for _, n := range pullSecrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: n})
	}
	return p
}

// runManager starts m.Run until the test ends.
func runManager(t *testing.T, m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}
