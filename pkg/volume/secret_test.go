package volume

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func secretVolume(name string, src v1.SecretVolumeSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Secret: &src}}
}

func (e *testEnv) addSecret(ns, name string, data map[string][]byte) {
	e.getter.mu.Lock()
	defer e.getter.mu.Unlock()
	e.getter.secrets[ns+"/"+name] = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestSecretOnTmpfs(t *testing.T) {
	e := newTestEnv(t)
	e.host.Allocatable = v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}
	e.addSecret("ns", "creds", map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret")})
	p := newSecretPlugin(e.host)
	pod := testPod(secretVolume("creds", v1.SecretVolumeSource{SecretName: "creds"}))
	c := e.ctx(t, p, pod, "creds")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if size, ok := e.mounter.size(path); !ok || size != 2<<30 {
		t.Errorf("tmpfs size %d mounted %v, want allocatable memory", size, ok)
	}
	if got := visibleNames(t, path); !slices.Equal(got, []string{"pass", "user"}) {
		t.Errorf("files %v", got)
	}
	if got := readFile(t, filepath.Join(path, "pass")); got != "s3cret" {
		t.Errorf("pass = %q", got)
	}
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if n := e.mounter.mountCount(); n != 1 {
		t.Errorf("mounted %d times", n)
	}
	if err := p.TearDown(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.mounter.size(path); ok || exists(path) {
		t.Error("TearDown left the tmpfs or the directory")
	}
}

func TestSecretErrors(t *testing.T) {
	e := newTestEnv(t)
	e.addSecret("ns", "creds", map[string][]byte{"user": []byte("admin")})
	p := newSecretPlugin(e.host)
	tests := []struct {
		name    string
		src     v1.SecretVolumeSource
		wantErr string
	}{
		{"missing", v1.SecretVolumeSource{SecretName: "nope"}, `secret "nope" not found`},
		{"missing key", v1.SecretVolumeSource{SecretName: "creds", Items: []v1.KeyToPath{{Key: "pass", Path: "p"}}},
			"references non-existent secret key: pass"},
		{"traversal", v1.SecretVolumeSource{SecretName: "creds", Items: []v1.KeyToPath{{Key: "user", Path: "a/../../../x"}}},
			"invalid path: must not contain '..': a/../../../x"},
	}
	for _, tt := range tests {
		pod := testPod(secretVolume("creds", tt.src))
		c := e.ctx(t, p, pod, "creds")
		_, err := p.SetUp(context.Background(), c)
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
		if exists(c.Dir) {
			t.Errorf("%s: left %s", tt.name, c.Dir)
		}
		if _, ok := e.mounter.size(c.Dir); ok {
			t.Errorf("%s: left a tmpfs", tt.name)
		}
	}
	pod := testPod(secretVolume("creds", v1.SecretVolumeSource{SecretName: "nope", Optional: ptr(true)}))
	if _, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "creds")); err != nil {
		t.Errorf("optional missing secret: %v", err)
	}
}

func TestSecretMountFailure(t *testing.T) {
	e := newTestEnv(t)
	e.addSecret("ns", "creds", map[string][]byte{"user": []byte("admin")})
	e.mounter.failErr = errors.New("no tmpfs for you")
	p := newSecretPlugin(e.host)
	pod := testPod(secretVolume("creds", v1.SecretVolumeSource{SecretName: "creds"}))
	c := e.ctx(t, p, pod, "creds")
	if _, err := p.SetUp(context.Background(), c); err == nil {
		t.Fatal("SetUp succeeded without a tmpfs")
	}
	// The secret must not land on the disk instead.
	if exists(c.Dir) {
		t.Errorf("left %s on disk", c.Dir)
	}
}
