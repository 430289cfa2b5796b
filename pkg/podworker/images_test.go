package podworker

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func writeDockerConfig(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestKeyringLookup(t *testing.T) {
	cfg := `{"auths": {
		"https://index.docker.io/v1/": {"auth": "` + b64("hubuser:hubpass") + `"},
		"registry.example.com:5000": {"username": "u", "password": "p"},
		"quay.io": {"auth": "` + b64("q:pw:with:colons") + `"},
		"http://insecure.local/v2/": {"username": "i", "password": "ip"}
	}}`
	path := writeDockerConfig(t, t.TempDir(), cfg)
	k, err := loadKeyring(filepath.Join(t.TempDir(), "missing.json"), path)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		image string
		want  *criv1.AuthConfig
	}{
		{"busybox", &criv1.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{"library/busybox:1", &criv1.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{"docker.io/library/busybox:1", &criv1.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{"registry.example.com:5000/team/app:v1", &criv1.AuthConfig{Username: "u", Password: "p"}},
		{"registry.example.com/team/app", nil}, // other port, other registry
		{"quay.io/org/img@sha256:" + strings.Repeat("a", 64), &criv1.AuthConfig{Username: "q", Password: "pw:with:colons"}},
		{"insecure.local/x", &criv1.AuthConfig{Username: "i", Password: "ip"}},
		{"gcr.io/other/img", nil},
		{"Invalid//Image", nil},
	}
	for _, tc := range cases {
		t.Run(tc.image, func(t *testing.T) {
			if got := k.lookup(tc.image); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lookup(%q) = %v, want %v", tc.image, got, tc.want)
			}
		})
	}
}

func TestKeyringDockerIOKey(t *testing.T) {
	path := writeDockerConfig(t, t.TempDir(), `{"auths": {"docker.io": {"username": "u", "password": "p"}}}`)
	k, err := loadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.lookup("docker.io/library/busybox:1"); got == nil || got.Username != "u" {
		t.Errorf("lookup = %v, want u/p", got)
	}
}

func TestLoadKeyring(t *testing.T) {
	dir := t.TempDir()
	first := writeDockerConfig(t, filepath.Join(dir), `{"auths": {"a.io": {"username": "first"}}}`)
	otherDir := filepath.Join(dir, "other")
	if err := os.Mkdir(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	second := writeDockerConfig(t, otherDir, `{"auths": {"a.io": {"username": "second"}, "b.io": {"username": "b"}}}`)

	k, err := loadKeyring(first, second)
	if err != nil || k.lookup("a.io/x").GetUsername() != "first" || k.lookup("b.io/x") != nil {
		t.Errorf("the first existing file wins: err=%v a=%v b=%v", err, k.lookup("a.io/x"), k.lookup("b.io/x"))
	}
	k, err = loadKeyring(filepath.Join(dir, "none"))
	if err != nil || k == nil || k.lookup("a.io/x") != nil {
		t.Errorf("no files: keyring %v, err %v; want an empty keyring", k, err)
	}
	bad := writeDockerConfig(t, t.TempDir(), `{"auths": `)
	if _, err := loadKeyring(bad); err == nil {
		t.Error("invalid JSON: want an error")
	}
	var nilKeyring *keyring
	if nilKeyring.lookup("busybox") != nil {
		t.Error("nil keyring lookup should be nil")
	}
}

// recordedEvents is a function-field-free fake recorder keeping reasons.
type recordedEvents struct {
	mu      sync.Mutex
	reasons []string
}

func (r *recordedEvents) Eventf(_ apiruntime.Object, _, reason, _ string, _ ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func TestPullerEnsure(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		image     string
		policy    v1.PullPolicy
		present   bool
		pullErrs  int // PullImage failures to inject
		calls     int // ensure calls
		wantRef   string
		wantErr   string // pullError reason of the last call
		wantPulls []string
	}{
		{name: "present, IfNotPresent: no pull", image: "busybox:1", policy: v1.PullIfNotPresent, present: true, calls: 1,
			wantRef: "busybox:1", wantPulls: []string{"ImageStatus"}},
		{name: "absent, IfNotPresent: pull", image: "busybox:1", policy: v1.PullIfNotPresent, calls: 1,
			wantRef: "busybox:1", wantPulls: []string{"ImageStatus", "PullImage"}},
		{name: "present, Always: pull", image: "busybox:1", policy: v1.PullAlways, present: true, calls: 1,
			wantRef: "busybox:1", wantPulls: []string{"ImageStatus", "PullImage"}},
		{name: "absent, Never", image: "busybox:1", policy: v1.PullNever, calls: 1,
			wantErr: ReasonErrImageNeverPull, wantPulls: []string{"ImageStatus"}},
		{name: "invalid name", image: "Bad Image!", policy: v1.PullIfNotPresent, calls: 1, wantErr: ReasonInvalidImageName},
		{name: "failed pull", image: "busybox:1", policy: v1.PullIfNotPresent, pullErrs: 1, calls: 1,
			wantErr: ReasonErrImagePull, wantPulls: []string{"ImageStatus", "PullImage"}},
		{name: "failed pull then back-off without pulling", image: "busybox:1", policy: v1.PullIfNotPresent, pullErrs: 1, calls: 2,
			wantErr: ReasonImagePullBackOff, wantPulls: []string{"ImageStatus", "PullImage", "ImageStatus"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := critest.NewFakeImageService()
			if tc.present {
				img.SetFakeImages([]string{tc.image})
			}
			for i := 0; i < tc.pullErrs; i++ {
				img.InjectError("PullImage", errors.New("registry down"))
			}
			ev := &recordedEvents{}
			p := &puller{images: img, events: ev, keyring: &keyring{},
				backoff: flowcontrol.NewFakeBackOff(10*time.Second, 300*time.Second, testingclock.NewFakeClock(t0))}
			pod := planBasePod()
			c := &v1.Container{Name: "c", Image: tc.image, ImagePullPolicy: tc.policy}
			var ref string
			var err error
			for i := 0; i < tc.calls; i++ {
				ref, err = p.ensure(context.Background(), pod, c, nil)
			}
			if tc.wantErr != "" {
				var pe *pullError
				if !errors.As(err, &pe) || pe.Reason != tc.wantErr {
					t.Fatalf("err = %v, want pullError %s", err, tc.wantErr)
				}
				if tc.wantErr == ReasonErrImageNeverPull && pe.Message != `Container image "busybox:1" is not present with pull policy of Never` {
					t.Errorf("message = %q", pe.Message)
				}
			} else if err != nil || ref != tc.wantRef {
				t.Fatalf("ensure = %q, %v; want %q", ref, err, tc.wantRef)
			}
			img.Lock()
			calls := append([]string(nil), img.Called...)
			img.Unlock()
			if !reflect.DeepEqual(calls, tc.wantPulls) && !(len(calls) == 0 && len(tc.wantPulls) == 0) {
				t.Errorf("image service calls = %v, want %v", calls, tc.wantPulls)
			}
			if len(ev.reasons) == 0 && tc.wantErr != ReasonInvalidImageName {
				t.Error("no event recorded")
			}
		})
	}
}

func TestPullerSendsCredentials(t *testing.T) {
	img := critest.NewFakeImageService()
	k := &keyring{auths: map[string]dockerAuth{"registry.example.com": {Username: "u", Password: "p"}}}
	p := &puller{images: img, events: &recordedEvents{}, keyring: k, backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
	c := &v1.Container{Name: "c", Image: "registry.example.com/app:1"}
	if _, err := p.ensure(context.Background(), planBasePod(), c, nil); err != nil {
		t.Fatal(err)
	}
	img.AssertImagePulledWithAuth(t, &criv1.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image},
		&criv1.AuthConfig{Username: "u", Password: "p"}, "pull with the keyring's credentials")
}

func TestPullerQPSLimit(t *testing.T) {
	img := critest.NewFakeImageService()
	p := &puller{images: img, events: &recordedEvents{}, keyring: &keyring{},
		backoff: flowcontrol.NewBackOff(time.Second, time.Minute),
		limiter: flowcontrol.NewFakeNeverRateLimiter()}
	c := &v1.Container{Name: "c", Image: "registry.example.com/app:1", ImagePullPolicy: v1.PullAlways}
	_, err := p.ensure(context.Background(), planBasePod(), c, nil)
	var pe *pullError
	if !errors.As(err, &pe) || pe.Reason != ReasonErrImagePull || !strings.Contains(pe.Message, "pull QPS exceeded") {
		t.Fatalf("err = %v, want ErrImagePull: pull QPS exceeded", err)
	}
	if len(img.Called) != 1 || img.Called[0] != "ImageStatus" {
		t.Errorf("calls %v: the image must not be pulled over the limit", img.Called)
	}
}
