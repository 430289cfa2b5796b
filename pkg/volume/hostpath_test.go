package volume

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func hostPathVolume(path string, typ v1.HostPathType) v1.Volume {
	return v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{
		HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ},
	}}
}

// hostFixtures makes a directory, a file, a socket and a symlink to the
// directory in a temp dir.
func hostFixtures(t *testing.T) (dir, file, sock, link string) {
	t.Helper()
	base := t.TempDir()
	dir, file, sock, link = filepath.Join(base, "d"), filepath.Join(base, "f"), filepath.Join(base, "s"), filepath.Join(base, "l")
	mustMkdirAll(t, dir)
	mustWrite(t, file, "x")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	return dir, file, sock, link
}

func TestHostPathTypes(t *testing.T) {
	dir, file, sock, link := hostFixtures(t)
	missing := filepath.Join(filepath.Dir(dir), "missing")
	tests := []struct {
		path    string
		typ     v1.HostPathType
		wantErr string
	}{
		{missing, v1.HostPathUnset, ""},
		{dir, v1.HostPathDirectory, ""},
		{link, v1.HostPathDirectory, ""}, // symlinks are followed
		{file, v1.HostPathDirectory, "hostPath type check failed: %s is not a directory"},
		{missing, v1.HostPathDirectory, "hostPath type check failed: %s is not a directory"},
		{file, v1.HostPathFile, ""},
		{sock, v1.HostPathFile, ""}, // a "file" is anything but a directory
		{dir, v1.HostPathFile, "hostPath type check failed: %s is not a file"},
		{missing, v1.HostPathFile, "hostPath type check failed: %s is not a file"},
		{sock, v1.HostPathSocket, ""},
		{file, v1.HostPathSocket, "hostPath type check failed: %s is not a socket file"},
		{"/dev/null", v1.HostPathCharDev, ""},
		{file, v1.HostPathCharDev, "hostPath type check failed: %s is not a character device"},
		{"/dev/null", v1.HostPathBlockDev, "hostPath type check failed: %s is not a block device"},
		{file, v1.HostPathDirectoryOrCreate, "hostPath type check failed: %s is not a directory"},
		{dir, v1.HostPathFileOrCreate, "hostPath type check failed: %s is not a file"},
		{dir, "Weird", "Weird is an invalid volume type"},
		{"/a/../etc", v1.HostPathUnset, "invalid HostPath `/a/../etc`: must not contain '..'"},
	}
	p := &hostPathPlugin{}
	for _, tt := range tests {
		pod := testPod(hostPathVolume(tt.path, tt.typ))
		got, err := p.SetUp(context.Background(), SetUpContext{Pod: pod, Volume: &pod.Spec.Volumes[0]})
		want := tt.wantErr
		if want != "" && want[0] == 'h' {
			want = fmt.Sprintf(want, tt.path)
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s %q: %v", tt.typ, tt.path, err)
		case want == "" && got != tt.path:
			t.Errorf("%s %q: path %q", tt.typ, tt.path, got)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s %q: err %v, want %q", tt.typ, tt.path, err, want)
		}
	}
}

func TestHostPathBlockDevice(t *testing.T) {
	requireRoot(t)
	dev := filepath.Join(t.TempDir(), "blk")
	if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if err := checkHostPath(dev, ptr(v1.HostPathBlockDev)); err != nil {
		t.Error(err)
	}
	if err := checkHostPath(dev, ptr(v1.HostPathCharDev)); err == nil {
		t.Error("block device passed as char device")
	}
}

func TestHostPathOrCreate(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	base := t.TempDir()
	dir := filepath.Join(base, "a/b/c")
	if err := checkHostPath(dir, ptr(v1.HostPathDirectoryOrCreate)); err != nil {
		t.Fatal(err)
	}
	if m := fileModeOf(t, dir); !m.IsDir() {
		t.Errorf("created %v, want a directory", m)
	}
	file := filepath.Join(base, "f")
	if err := checkHostPath(file, ptr(v1.HostPathFileOrCreate)); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
		t.Errorf("created %v %v, want an empty file", info, err)
	}
	// As the kubelet: FileOrCreate does not create the parent.
	if err := checkHostPath(filepath.Join(base, "nodir/f"), ptr(v1.HostPathFileOrCreate)); err == nil {
		t.Error("FileOrCreate created a missing parent")
	}
}

func TestHostPathTearDownKeepsPath(t *testing.T) {
	dir, _, _, _ := hostFixtures(t)
	if err := (&hostPathPlugin{}).TearDown(dir); err != nil || !exists(dir) {
		t.Errorf("TearDown touched the host path: %v", err)
	}
}
