package volume

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMapVolume(name string, src v1.ConfigMapVolumeSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &src}}
}

func cmRef(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }

func (e *testEnv) addConfigMap(ns, name string, data map[string]string, binary map[string][]byte) {
	e.getter.mu.Lock()
	defer e.getter.mu.Unlock()
	e.getter.configMaps[ns+"/"+name] = &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data, BinaryData: binary,
	}
}

func TestConfigMapAllKeys(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"a.conf": "A", "b.conf": "B"}, map[string][]byte{"bin": {0, 1, 2}})
	p := newConfigMapPlugin(e.host)
	pod := testPod(configMapVolume("cfg", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}))
	c := e.ctx(t, p, pod, "cfg")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if path != c.Dir {
		t.Errorf("path %s, want %s", path, c.Dir)
	}
	if got := visibleNames(t, path); !slices.Equal(got, []string{"a.conf", "b.conf", "bin"}) {
		t.Errorf("files %v", got)
	}
	if got := readFile(t, filepath.Join(path, "bin")); got != "\x00\x01\x02" {
		t.Errorf("bin = %q", got)
	}
	if m := fileModeOf(t, filepath.Join(path, "a.conf")).Perm(); m != 0o644 {
		t.Errorf("default mode %o, want 644", m)
	}
	if n := e.mounter.mountCount(); n != 0 {
		t.Errorf("config map volume mounted a tmpfs (%d)", n)
	}
	// Updates propagate on the next SetUp; removed keys disappear.
	e.addConfigMap("ns", "app", map[string]string{"a.conf": "A2"}, nil)
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(t, path); !slices.Equal(got, []string{"a.conf"}) {
		t.Errorf("files after update %v", got)
	}
	if got := readFile(t, filepath.Join(path, "a.conf")); got != "A2" {
		t.Errorf("a.conf = %q", got)
	}
	if err := p.TearDown(path); err != nil || exists(path) {
		t.Errorf("TearDown: %v, exists %v", err, exists(path))
	}
}

func TestConfigMapItems(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"k1": "v1", "k2": "v2"}, map[string][]byte{"kb": []byte("b")})
	p := newConfigMapPlugin(e.host)
	pod := testPod(configMapVolume("cfg", v1.ConfigMapVolumeSource{
		LocalObjectReference: cmRef("app"), DefaultMode: ptr(int32(0o440)),
		Items: []v1.KeyToPath{
			{Key: "k1", Path: "dir/one"}, {Key: "kb", Path: "binary", Mode: ptr(int32(0o600))},
		},
	}))
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(t, path); !slices.Equal(got, []string{"binary", "dir"}) {
		t.Errorf("files %v", got)
	}
	if got := readFile(t, filepath.Join(path, "dir/one")); got != "v1" {
		t.Errorf("dir/one = %q", got)
	}
	if m := fileModeOf(t, filepath.Join(path, "dir/one")).Perm(); m != 0o440 {
		t.Errorf("defaultMode %o, want 440", m)
	}
	if m := fileModeOf(t, filepath.Join(path, "binary")).Perm(); m != 0o600 {
		t.Errorf("item mode %o, want 600", m)
	}
}

func TestConfigMapErrors(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"k": "v"}, nil)
	p := newConfigMapPlugin(e.host)
	tests := []struct {
		name    string
		src     v1.ConfigMapVolumeSource
		wantErr string
	}{
		{"missing object", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("nope")}, `configmap "nope" not found`},
		{"missing key", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"),
			Items: []v1.KeyToPath{{Key: "absent", Path: "x"}}}, "configmap references non-existent config key: absent"},
		{"traversal", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"),
			Items: []v1.KeyToPath{{Key: "k", Path: "../../escape"}}}, "invalid path: must not contain '..': ../../escape"},
		{"absolute", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"),
			Items: []v1.KeyToPath{{Key: "k", Path: "/etc/x"}}}, "invalid path: must be relative path: /etc/x"},
		{"reserved", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"),
			Items: []v1.KeyToPath{{Key: "k", Path: "..data"}}}, "invalid path: must not start with '..': ..data"},
	}
	for _, tt := range tests {
		pod := testPod(configMapVolume("cfg", tt.src))
		c := e.ctx(t, p, pod, "cfg")
		_, err := p.SetUp(context.Background(), c)
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
		if exists(c.Dir) {
			t.Errorf("%s: failed set-up left %s", tt.name, c.Dir)
		}
	}
	if exists(filepath.Join(e.root, "pods/uid-1/volumes/escape")) {
		t.Error("traversal wrote outside the volume")
	}
}

func TestConfigMapOptional(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"k": "v"}, nil)
	p := newConfigMapPlugin(e.host)
	for _, src := range []v1.ConfigMapVolumeSource{
		{LocalObjectReference: cmRef("nope"), Optional: ptr(true)},
		{LocalObjectReference: cmRef("app"), Optional: ptr(true), Items: []v1.KeyToPath{{Key: "absent", Path: "x"}, {Key: "k", Path: "y"}}},
	} {
		pod := testPod(configMapVolume("cfg", src))
		c := e.ctx(t, p, pod, "cfg")
		if _, err := p.SetUp(context.Background(), c); err != nil {
			t.Errorf("%s: %v", src.Name, err)
		}
		_ = p.TearDown(c.Dir)
	}
}

func TestConfigMapStandalone(t *testing.T) {
	e := newTestEnv(t)
	e.host.Getter = nil
	p := newConfigMapPlugin(e.host)
	pod := testPod(configMapVolume("cfg", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}))
	_, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "cfg"))
	if err == nil || !strings.Contains(err.Error(), "kube client is not configured") {
		t.Errorf("err = %v", err)
	}
}

func TestConfigMapNestedMountpoint(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"k": "v"}, nil)
	p := newConfigMapPlugin(e.host)
	pod := testPod(configMapVolume("cfg", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}))
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app"}, {Name: "tls", MountPath: "/etc/app/tls"},
	}
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(path, "tls")); err != nil || !info.IsDir() {
		t.Errorf("nested mount point not created: %v", err)
	}
}

func TestConfigMapFSGroup(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t)
	e.addConfigMap("ns", "app", map[string]string{"k": "v"}, nil)
	p := newConfigMapPlugin(e.host)
	pod := testPod(configMapVolume("cfg", v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"), DefaultMode: ptr(int32(0o400))}))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(3000))}
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(path, "k")
	if g := gidOf(t, f); g != 3000 {
		t.Errorf("file gid %d", g)
	}
	// Read-only volume: group read is added, not write.
	if m := fileModeOf(t, f).Perm(); m != 0o440 {
		t.Errorf("file mode %o, want 440", m)
	}
	if m := fileModeOf(t, path); m&os.ModeSetgid == 0 {
		t.Errorf("root mode %v lacks setgid", m)
	}
}
