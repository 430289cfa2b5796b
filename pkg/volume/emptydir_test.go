package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func emptyDirVolume(name string, src v1.EmptyDirVolumeSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &src}}
}

func TestEmptyDirDisk(t *testing.T) {
	e := newTestEnv(t)
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("scratch", v1.EmptyDirVolumeSource{}))
	c := e.ctx(t, p, pod, "scratch")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(e.root, "pods/uid-1/volumes/kubernetes.io~empty-dir/scratch")
	if path != want {
		t.Errorf("path %s, want %s", path, want)
	}
	if m := fileModeOf(t, path).Perm(); m != 0o777 {
		t.Errorf("mode %o, want 777", m)
	}
	if !exists(filepath.Join(e.root, "pods/uid-1/plugins/kubernetes.io~empty-dir/scratch/ready")) {
		t.Error("ready marker missing")
	}
	// A ready volume is left alone: what the pod did to it stays.
	mustWrite(t, filepath.Join(path, "data"), "kept")
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if m := fileModeOf(t, path).Perm(); m != 0o700 {
		t.Errorf("second SetUp reset mode to %o", m)
	}
	if got := readFile(t, filepath.Join(path, "data")); got != "kept" {
		t.Errorf("data = %q", got)
	}
	if err := p.TearDown(path); err != nil {
		t.Fatal(err)
	}
	if exists(path) || exists(filepath.Join(e.root, "pods/uid-1/plugins")) {
		t.Error("TearDown left the volume or its meta directory")
	}
	if err := p.TearDown(path); err != nil {
		t.Errorf("second TearDown: %v", err)
	}
}

func TestEmptyDirModeField(t *testing.T) {
	e := newTestEnv(t)
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("db", v1.EmptyDirVolumeSource{Mode: ptr(int32(0o1750))}))
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "db"))
	if err != nil {
		t.Fatal(err)
	}
	if m := fileModeOf(t, path) & (os.ModePerm | os.ModeSticky); m != 0o750|os.ModeSticky {
		t.Errorf("mode %v, want 1750", m)
	}
}

func TestEmptyDirMemoryFake(t *testing.T) {
	e := newTestEnv(t)
	e.host.Allocatable = v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")}
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("cache", v1.EmptyDirVolumeSource{
		Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi")),
	}))
	c := e.ctx(t, p, pod, "cache")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if size, ok := e.mounter.size(path); !ok || size != 64<<20 {
		t.Errorf("tmpfs size %d (mounted %v), want 64Mi", size, ok)
	}
	if m := fileModeOf(t, path) & (os.ModePerm | os.ModeSticky); m != 0o777|os.ModeSticky {
		t.Errorf("root mode %v, want 1777", m)
	}
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if n := e.mounter.mountCount(); n != 1 {
		t.Errorf("mounted %d times, want once", n)
	}
	if err := p.TearDown(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.mounter.size(path); ok || exists(path) {
		t.Error("TearDown left the tmpfs or the directory")
	}
}

func TestEmptyDirMemoryNeedsMounter(t *testing.T) {
	e := newTestEnv(t)
	e.host.Mounter = nil
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("cache", v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}))
	_, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "cache"))
	if err == nil || err.Error() != "memory storage requested, but mounter is nil" {
		t.Errorf("err = %v", err)
	}
}

func TestEmptyDirUnsupportedMedium(t *testing.T) {
	e := newTestEnv(t)
	p := &emptyDirPlugin{host: e.host}
	for medium, want := range map[v1.StorageMedium]string{
		"HugePages-2Mi": "hugepages emptyDir volumes are not supported",
		"Tape":          `unknown storage medium "Tape"`,
	} {
		pod := testPod(emptyDirVolume("v", v1.EmptyDirVolumeSource{Medium: medium}))
		_, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "v"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", medium, err, want)
		}
	}
}

func TestEmptyDirFSGroup(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t)
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("shared", v1.EmptyDirVolumeSource{}))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(3000))}
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	if g := gidOf(t, path); g != 3000 {
		t.Errorf("gid %d, want 3000", g)
	}
	if m := fileModeOf(t, path); m&os.ModeSetgid == 0 || m.Perm() != 0o777 {
		t.Errorf("mode %v, want setgid 777", m)
	}
}

// TestEmptyDirMemoryTmpfs mounts a real tmpfs.
func TestEmptyDirMemoryTmpfs(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t)
	e.host.Mounter = SysMounter{}
	p := &emptyDirPlugin{host: e.host}
	pod := testPod(emptyDirVolume("cache", v1.EmptyDirVolumeSource{
		Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("4Mi")),
	}))
	c := e.ctx(t, p, pod, "cache")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Skipf("cannot mount tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = SysMounter{}.Unmount(path) })
	if !isTmpfs(t, path) {
		t.Fatal("volume is not on a tmpfs")
	}
	if m := fileModeOf(t, path) & (os.ModePerm | os.ModeSticky); m != 0o777|os.ModeSticky {
		t.Errorf("root mode %v, want 1777", m)
	}
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := p.TearDown(path); err != nil {
		t.Fatal(err)
	}
	if exists(path) {
		t.Error("directory left after TearDown")
	}
}
