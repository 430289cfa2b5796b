package volume

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// kubeAPIAccess is the volume the ServiceAccount admission plugin injects.
func kubeAPIAccess() v1.Volume {
	return v1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o644)),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
			{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: cmRef("kube-root-ca.crt"),
				Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{fieldItem("namespace", "metadata.namespace")}}},
		},
	}}}
}

func newTestProjected(e *testEnv) *projectedPlugin {
	return newProjectedPlugin(e.host, newTokenCache(slog.New(slog.DiscardHandler)))
}

func TestProjectedKubeAPIAccess(t *testing.T) {
	e := newTestEnv(t)
	e.addConfigMap("ns", "kube-root-ca.crt", map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}, nil)
	p := newTestProjected(e)
	pod := testPod(kubeAPIAccess())
	c := e.ctx(t, p, pod, "kube-api-access-x7k2p")
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.mounter.size(path); !ok {
		t.Error("projected volume is not on a tmpfs")
	}
	if got := visibleNames(t, path); !slices.Equal(got, []string{"ca.crt", "namespace", "token"}) {
		t.Errorf("files %v", got)
	}
	if got := readFile(t, filepath.Join(path, "namespace")); got != "ns" {
		t.Errorf("namespace = %q", got)
	}
	if got := readFile(t, filepath.Join(path, "token")); got != "token-ns-default-1" {
		t.Errorf("token = %q", got)
	}
	if m := fileModeOf(t, filepath.Join(path, "token")).Perm(); m != 0o644 {
		t.Errorf("token mode %o, want the default 644 without fsGroup/runAsUser", m)
	}
	req := e.getter.tokenRequests[0]
	ref := req.Spec.BoundObjectRef
	if *req.Spec.ExpirationSeconds != 3607 || len(req.Spec.Audiences) != 0 ||
		ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != "web" || ref.UID != "uid-1" {
		t.Errorf("token request %+v, bound to %+v", req.Spec, ref)
	}
	// The next sync reuses the cached token.
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if n := e.getter.tokenCalls(); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	if err := p.TearDown(path); err != nil {
		t.Fatal(err)
	}
	if exists(path) {
		t.Error("TearDown left the directory")
	}
	if len(p.tokens.tokens) != 0 {
		t.Error("TearDown kept the pod's tokens")
	}
}

func TestProjectedTokenAudienceAndDefaultExpiry(t *testing.T) {
	e := newTestEnv(t)
	p := newTestProjected(e)
	pod := testPod(v1.Volume{Name: "vault", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "vault-token", Audience: "vault"}}},
	}}})
	pod.Spec.ServiceAccountName = "builder"
	if _, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "vault")); err != nil {
		t.Fatal(err)
	}
	req := e.getter.tokenRequests[0]
	if !slices.Equal(req.Spec.Audiences, []string{"vault"}) || *req.Spec.ExpirationSeconds != 3600 {
		t.Errorf("request spec %+v", req.Spec)
	}
}

func TestProjectedTokenFsUser(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t)
	e.addConfigMap("ns", "kube-root-ca.crt", map[string]string{"ca.crt": "ca"}, nil)
	p := newTestProjected(e)
	pod := testPod(kubeAPIAccess())
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000))}
	path, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "kube-api-access-x7k2p"))
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(path, "token")
	info, err := os.Stat(token)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	// 0600 owned by the user, plus group read from the fsGroup change.
	if st.Uid != 1000 || st.Gid != 2000 || info.Mode().Perm() != 0o640 {
		t.Errorf("token uid %d gid %d mode %o, want 1000 2000 640", st.Uid, st.Gid, info.Mode().Perm())
	}
}

func TestFsUserOf(t *testing.T) {
	pod := testPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "init"}}
	if u := fsUserOf(pod); u != nil {
		t.Errorf("no runAsUser: %v", *u)
	}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000))}
	if u := fsUserOf(pod); u == nil || *u != 1000 {
		t.Errorf("pod runAsUser: %v", u)
	}
	pod.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr(int64(0))}
	if u := fsUserOf(pod); u != nil {
		t.Errorf("differing users: %v", *u)
	}
}

func TestProjectedErrors(t *testing.T) {
	e := newTestEnv(t)
	e.addSecret("ns", "s", map[string][]byte{"k": []byte("v")})
	p := newTestProjected(e)
	pod := testPod(v1.Volume{Name: "mix", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("nope")}},
			{Secret: &v1.SecretProjection{LocalObjectReference: cmRef("s"), Items: []v1.KeyToPath{{Key: "absent", Path: "a"}}}},
			{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr("bundle"), Path: "b"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("gone"), Optional: ptr(true)}},
		},
	}}})
	c := e.ctx(t, p, pod, "mix")
	_, err := p.SetUp(context.Background(), c)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`configmap "nope" not found`, "references non-existent secret key: absent", "clusterTrustBundle"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if exists(c.Dir) {
		t.Error("failed set-up left the directory")
	}
}

func TestProjectedStandaloneToken(t *testing.T) {
	e := newTestEnv(t)
	e.host.Getter = nil
	p := newTestProjected(e)
	pod := testPod(kubeAPIAccess())
	_, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "kube-api-access-x7k2p"))
	if err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("err = %v", err)
	}
}

func TestPodUIDOf(t *testing.T) {
	dir := VolumeDir("/var/lib/nodeagent", "uid-9", projectedPluginName, "v")
	if got := podUIDOf(dir); got != "uid-9" {
		t.Errorf("podUIDOf = %q", got)
	}
}
