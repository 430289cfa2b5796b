package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeGetter serves objects from maps, records token requests and
// returns injected errors, as the API client would.
type fakeGetter struct {
	mu         sync.Mutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	pvcs       map[string]*v1.PersistentVolumeClaim
	pvs        map[string]*v1.PersistentVolume
	// tokenErr fails CreateToken when set.
	tokenErr error
	// now stamps issued tokens, which live as long as requested.
	now           func() time.Time
	tokenRequests []*authenticationv1.TokenRequest
}

func newFakeGetter() *fakeGetter {
	return &fakeGetter{
		configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{},
		pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{},
		now: time.Now,
	}
}

func (g *fakeGetter) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cm, ok := g.configMaps[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

func (g *fakeGetter) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.secrets[ns+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func (g *fakeGetter) CreateToken(_ context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tokenErr != nil {
		return nil, g.tokenErr
	}
	g.tokenRequests = append(g.tokenRequests, req.DeepCopy())
	out := req.DeepCopy()
	exp := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	out.Status.Token = fmt.Sprintf("token-%s-%s-%d", ns, sa, len(g.tokenRequests))
	out.Status.ExpirationTimestamp = metav1.NewTime(g.now().Add(exp))
	return out, nil
}

func (g *fakeGetter) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.pvcs[ns+"/"+name]; ok {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), name)
}

func (g *fakeGetter) GetPersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pv, ok := g.pvs[name]; ok {
		return pv.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("persistentvolumes"), name)
}

func (g *fakeGetter) tokenCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tokenRequests)
}

// fakeMounter keeps a mount table in memory: nothing is really mounted.
type fakeMounter struct {
	mu      sync.Mutex
	mounted map[string]int64 // dir -> size
	calls   []string
	failErr error
}

func newFakeMounter() *fakeMounter { return &fakeMounter{mounted: map[string]int64{}} }

func (m *fakeMounter) MountTmpfs(dir string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf("mount %s %d", dir, size))
	if m.failErr != nil {
		return m.failErr
	}
	m.mounted[dir] = size
	return nil
}

func (m *fakeMounter) Unmount(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "unmount "+dir)
	if _, ok := m.mounted[dir]; !ok {
		return fmt.Errorf("%s: not mounted", dir)
	}
	delete(m.mounted, dir)
	return nil
}

func (m *fakeMounter) IsMountPoint(dir string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := os.Lstat(dir); err != nil {
		return false, err
	}
	_, ok := m.mounted[dir]
	return ok, nil
}

func (m *fakeMounter) size(dir string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.mounted[dir]
	return s, ok
}

func (m *fakeMounter) mountCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		if len(c) > 5 && c[:5] == "mount" {
			n++
		}
	}
	return n
}

// testEnv is a temp root with a fake API and mounter.
type testEnv struct {
	root    string
	getter  *fakeGetter
	mounter *fakeMounter
	host    Host
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	e := &testEnv{root: t.TempDir(), getter: newFakeGetter(), mounter: newFakeMounter()}
	e.host = Host{RootDir: e.root, NodeName: "node-1", Getter: e.getter, Mounter: e.mounter}
	return e
}

// ctx builds the set-up context of the pod's volume named name.
func (e *testEnv) ctx(t *testing.T, p Plugin, pod *v1.Pod, name string) SetUpContext {
	t.Helper()
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			v := &pod.Spec.Volumes[i]
			return SetUpContext{Pod: pod, Volume: v, Dir: VolumeDir(e.root, pod.UID, p.Name(), v.Name)}
		}
	}
	t.Fatalf("pod has no volume %q", name)
	return SetUpContext{}
}

func testPod(vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-1")},
		Spec: v1.PodSpec{
			NodeName: "node-1", ServiceAccountName: "default",
			Containers: []v1.Container{{Name: "app"}},
			Volumes:    vols,
		},
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

func fileModeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return info.Mode()
}

// visibleNames lists a volume's entries, hidden writer names aside.
func visibleNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if len(e.Name()) < 2 || e.Name()[:2] != ".." {
			out = append(out, e.Name())
		}
	}
	return out
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func mustMkdirAll(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	mustMkdirAll(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
