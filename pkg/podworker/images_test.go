package podworker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent/nodeagent/pkg/credentialprovider"
	"github.com/nodeagent/nodeagent/pkg/volume"
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

// TestNodeKeyring: config.json read as the kubelet's node keyring, and
// the image's repository matched against it.
func TestNodeKeyring(t *testing.T) {
	cfg := `{"auths": {
		"https://index.docker.io/v1/": {"auth": "` + b64("hubuser:hubpass") + `"},
		"registry.example.com:5000": {"username": "u", "password": "p"},
		"quay.io": {"auth": "` + b64("q:pw:with:colons") + `"},
		"http://insecure.local/v2/": {"username": "i", "password": "ip"},
		"*.corp.example": {"username": "w", "password": "wp"}
	}}`
	path := writeDockerConfig(t, t.TempDir(), cfg)
	k, err := loadKeyring(filepath.Join(t.TempDir(), "missing.json"), path)
	if err != nil {
		t.Fatal(err)
	}
	p := &puller{keyring: k}
	cases := []struct {
		image string
		want  []credentialprovider.AuthConfig
	}{
		{"busybox", []credentialprovider.AuthConfig{{Username: "hubuser", Password: "hubpass"}}},
		{"library/busybox:1", []credentialprovider.AuthConfig{{Username: "hubuser", Password: "hubpass"}}},
		{"docker.io/library/busybox:1", []credentialprovider.AuthConfig{{Username: "hubuser", Password: "hubpass"}}},
		{"registry.example.com:5000/team/app:v1", []credentialprovider.AuthConfig{{Username: "u", Password: "p"}}},
		{"registry.example.com/team/app", nil}, // other port, other registry
		{"quay.io/org/img@sha256:" + strings.Repeat("a", 64), []credentialprovider.AuthConfig{{Username: "q", Password: "pw:with:colons"}}},
		{"insecure.local/x", []credentialprovider.AuthConfig{{Username: "i", Password: "ip"}}},
		{"git.corp.example/x", []credentialprovider.AuthConfig{{Username: "w", Password: "wp"}}},
		{"gcr.io/other/img", nil},
	}
	for _, tc := range cases {
		t.Run(tc.image, func(t *testing.T) {
			got, err := p.credentials(tc.image, nil)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("credentials(%q) = %v, %v; want %v", tc.image, got, err, tc.want)
			}
		})
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
	if a := k.Lookup("a.io/x"); err != nil || len(a) != 1 || a[0].Username != "first" || k.Lookup("b.io/x") != nil {
		t.Errorf("the first existing file wins: err=%v a=%v b=%v", err, a, k.Lookup("b.io/x"))
	}
	k, err = loadKeyring(filepath.Join(dir, "none"))
	if err != nil || k == nil || k.Lookup("a.io/x") != nil {
		t.Errorf("no files: keyring %v, err %v; want an empty keyring", k, err)
	}
	bad := writeDockerConfig(t, t.TempDir(), `{"auths": `)
	if _, err := loadKeyring(bad); err == nil {
		t.Error("invalid JSON: want an error")
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
		// A pulled image's status is read for its size (the Pulled event).
		{name: "absent, IfNotPresent: pull", image: "busybox:1", policy: v1.PullIfNotPresent, calls: 1,
			wantRef: "busybox:1", wantPulls: []string{"ImageStatus", "PullImage", "ImageStatus"}},
		{name: "present, Always: pull", image: "busybox:1", policy: v1.PullAlways, present: true, calls: 1,
			wantRef: "busybox:1", wantPulls: []string{"ImageStatus", "PullImage", "ImageStatus"}},
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
			p := &puller{images: img, events: ev, keyring: &credentialprovider.Keyring{},
				backoff: flowcontrol.NewFakeBackOff(10*time.Second, 300*time.Second, testingclock.NewFakeClock(t0))}
			pod := planBasePod()
			c := &v1.Container{Name: "c", Image: tc.image, ImagePullPolicy: tc.policy}
			var ref string
			var err error
			for i := 0; i < tc.calls; i++ {
				ref, err = p.ensure(context.Background(), pod, c, nil, nil)
			}
			if tc.wantErr != "" {
				var pe *pullError
				if !errors.As(err, &pe) || pe.Reason != tc.wantErr {
					t.Fatalf("err = %v, want pullError %s", err, tc.wantErr)
				}
				// The kubelet's status messages: the runtime's error for
				// ErrImagePull, and that error again during the back-off.
				want := map[string]string{
					ReasonErrImageNeverPull: `Container image "busybox:1" is not present with pull policy of Never`,
					ReasonErrImagePull:      "registry down",
					ReasonImagePullBackOff:  `Back-off pulling image "busybox:1": ErrImagePull: registry down`,
				}
				if w, ok := want[tc.wantErr]; ok && pe.Message != w {
					t.Errorf("message = %q, want %q", pe.Message, w)
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
	k := &credentialprovider.Keyring{}
	k.Add(nil, credentialprovider.Config{"registry.example.com": {Username: "u", Password: "p"}})
	p := &puller{images: img, events: &recordedEvents{}, keyring: k, backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
	c := &v1.Container{Name: "c", Image: "registry.example.com/app:1"}
	if _, err := p.ensure(context.Background(), planBasePod(), c, nil, nil); err != nil {
		t.Fatal(err)
	}
	img.AssertImagePulledWithAuth(t, &criv1.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image},
		&criv1.AuthConfig{Username: "u", Password: "p"}, "pull with the keyring's credentials")
}

// authPulls is an image service whose pulls succeed only with the
// password "good", recording each attempt's user ("" for anonymous).
type authPulls struct {
	*critest.FakeImageService
	users []string
}

func (a *authPulls) PullImage(ctx context.Context, spec *criv1.ImageSpec, auth *criv1.AuthConfig, sb *criv1.PodSandboxConfig) (string, error) {
	a.users = append(a.users, auth.GetUsername())
	if auth.GetPassword() != "good" {
		return "", errors.New("unauthorized as " + auth.GetUsername())
	}
	return a.FakeImageService.PullImage(ctx, spec, auth, sb)
}

func dockerSecret(name, registry, user, password string) v1.Secret {
	doc := `{"auths":{"` + registry + `":{"auth":"` + b64(user+":"+password) + `"}}}`
	s := v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(doc)}}
	s.Name = name
	return s
}

// TestPullerCredentialOrder: the pod's secrets are tried before the
// node's, each in turn until one works; with none, one anonymous pull;
// when all fail, every error is reported and no anonymous pull is made.
func TestPullerCredentialOrder(t *testing.T) {
	node := &credentialprovider.Keyring{}
	node.Add(nil, credentialprovider.Config{"r.io": {Username: "node", Password: "good"}})
	cases := []struct {
		name      string
		image     string
		secrets   []v1.Secret
		wantUsers []string
		wantErr   string
	}{
		{name: "node only", image: "r.io/app:1", wantUsers: []string{"node"}},
		{name: "pod first, then node", image: "r.io/app:1",
			secrets: []v1.Secret{dockerSecret("s", "r.io", "pod", "bad")}, wantUsers: []string{"pod", "node"}},
		{name: "pod works", image: "r.io/app:1",
			secrets: []v1.Secret{dockerSecret("s", "https://r.io/v1/", "pod", "good")}, wantUsers: []string{"pod"}},
		{name: "secrets in order, most specific location first", image: "other.io/team/app:1",
			secrets:   []v1.Secret{dockerSecret("a", "other.io", "a", "bad"), dockerSecret("b", "other.io/team", "b", "bad")},
			wantUsers: []string{"b", "a"}, wantErr: "[unauthorized as b, unauthorized as a]"},
		{name: "no match: anonymous", image: "third.io/app:1", secrets: []v1.Secret{dockerSecret("s", "r.io", "pod", "good")},
			wantUsers: []string{""}, wantErr: "unauthorized as "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := &authPulls{FakeImageService: critest.NewFakeImageService()}
			p := &puller{images: img, events: &recordedEvents{}, keyring: node, backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
			c := &v1.Container{Name: "c", Image: tc.image}
			_, err := p.ensure(context.Background(), planBasePod(), c, nil, tc.secrets)
			if !reflect.DeepEqual(img.users, tc.wantUsers) {
				t.Errorf("pulls as %q, want %q", img.users, tc.wantUsers)
			}
			var pe *pullError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantErr != "" && (!errors.As(err, &pe) || pe.Reason != ReasonErrImagePull ||
				pe.Message != tc.wantErr):
				t.Errorf("err = %v, want ErrImagePull with %q", err, tc.wantErr)
			}
		})
	}
}

// TestPullerMalformedSecret: a pull secret that does not parse fails the
// container start with the parse error as its reason, as the kubelet's
// keyring error does, and nothing is pulled.
func TestPullerMalformedSecret(t *testing.T) {
	img := critest.NewFakeImageService()
	ev := &recordedEvents{}
	p := &puller{images: img, events: ev, keyring: &credentialprovider.Keyring{}, backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
	bad := v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"r.io":{"auth":"` + b64("nocolon") + `"}}`)}}
	_, err := p.ensure(context.Background(), planBasePod(), &v1.Container{Name: "c", Image: "r.io/app:1"}, nil, []v1.Secret{bad})
	const want = "unable to parse auth field, must be formatted as base64(username:password)"
	var pe *pullError
	if !errors.As(err, &pe) || pe.Reason != want || pe.Message != want {
		t.Fatalf("err = %#v, want reason and message %q", err, want)
	}
	if slices.Contains(img.Called, "PullImage") {
		t.Errorf("calls %v: nothing may be pulled", img.Called)
	}
}

// secretGetter serves secrets from a map; any other name is not found.
type secretGetter struct {
	volume.Getter
	secrets map[string]*v1.Secret
}

func (g secretGetter) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := g.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

// messageEvents records each event as "type reason: message".
type messageEvents struct{ got []string }

func (m *messageEvents) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	m.got = append(m.got, typ+" "+reason+": "+fmt.Sprintf(format, args...))
}

func TestPullSecretsForPod(t *testing.T) {
	found := dockerSecret("found", "r.io", "u", "p")
	getter := secretGetter{secrets: map[string]*v1.Secret{"new/found": &found}}
	cases := []struct {
		name       string
		objects    volume.Getter
		refs       []string
		wantNames  []string
		wantEvents []string
	}{
		{name: "none", objects: getter},
		{name: "all read", objects: getter, refs: []string{"found"}, wantNames: []string{"found"}},
		{name: "empty names skipped quietly", objects: getter, refs: []string{"", "found"}, wantNames: []string{"found"}},
		{name: "missing ones named in one event", objects: getter, refs: []string{"gone", "found", "lost"}, wantNames: []string{"found"},
			wantEvents: []string{"Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone, lost); attempting to pull the image may not succeed."}},
		{name: "no API (standalone)", refs: []string{"found"},
			wantEvents: []string{"Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (found); attempting to pull the image may not succeed."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &messageEvents{}
			w := &worker{d: deps{objects: tc.objects, events: ev}, log: slog.New(slog.DiscardHandler)}
			pod := planBasePod()
			for _, r := range tc.refs {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: r})
			}
			var names []string
			for _, s := range w.pullSecrets(context.Background(), pod) {
				names = append(names, s.Name)
			}
			if !reflect.DeepEqual(names, tc.wantNames) || !reflect.DeepEqual(ev.got, tc.wantEvents) {
				t.Errorf("secrets %v events %q; want %v %q", names, ev.got, tc.wantNames, tc.wantEvents)
			}
		})
	}
}

func TestPullerQPSLimit(t *testing.T) {
	img := critest.NewFakeImageService()
	p := &puller{images: img, events: &recordedEvents{}, keyring: &credentialprovider.Keyring{},
		backoff: flowcontrol.NewBackOff(time.Second, time.Minute),
		limiter: flowcontrol.NewFakeNeverRateLimiter()}
	c := &v1.Container{Name: "c", Image: "registry.example.com/app:1", ImagePullPolicy: v1.PullAlways}
	_, err := p.ensure(context.Background(), planBasePod(), c, nil, nil)
	var pe *pullError
	if !errors.As(err, &pe) || pe.Reason != ReasonErrImagePull || !strings.Contains(pe.Message, "pull QPS exceeded") {
		t.Fatalf("err = %v, want ErrImagePull: pull QPS exceeded", err)
	}
	if len(img.Called) != 1 || img.Called[0] != "ImageStatus" {
		t.Errorf("calls %v: the image must not be pulled over the limit", img.Called)
	}
}

// countingImages records how many pulls run at once; each pull waits for
// release.
type countingImages struct {
	*critest.FakeImageService
	mu       sync.Mutex
	now, max int
	started  chan struct{}
	release  chan struct{}
}

func (c *countingImages) PullImage(ctx context.Context, image *criv1.ImageSpec, auth *criv1.AuthConfig, sb *criv1.PodSandboxConfig) (string, error) {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
	c.started <- struct{}{}
	<-c.release
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
	return c.FakeImageService.PullImage(ctx, image, auth, sb)
}

// maxParallelImagePulls bounds the pulls at once; the serialized puller
// runs one; unbounded runs all.
func TestPullerParallelLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slots chan struct{}
		want  int
	}{
		{"serialized", make(chan struct{}, 1), 1},
		{"maxParallelImagePulls 2", make(chan struct{}, 2), 2},
		{"unbounded", nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := &countingImages{FakeImageService: critest.NewFakeImageService(), started: make(chan struct{}, 4), release: make(chan struct{})}
			p := &puller{images: img, events: &recordedEvents{}, keyring: &credentialprovider.Keyring{},
				backoff: flowcontrol.NewBackOff(time.Second, time.Minute), slots: tc.slots}
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := &v1.Container{Name: "c", Image: fmt.Sprintf("registry.example.com/app:%d", i), ImagePullPolicy: v1.PullAlways}
					if _, err := p.ensure(context.Background(), planBasePod(), c, nil, nil); err != nil {
						t.Error(err)
					}
				}()
			}
			for range tc.want {
				<-img.started // the bound's worth of pulls start
			}
			select {
			case <-img.started:
				t.Errorf("more than %d pulls started", tc.want)
			case <-time.After(100 * time.Millisecond):
			}
			close(img.release)
			wg.Wait()
			if img.max != tc.want {
				t.Errorf("at most %d pulls at once, want %d", img.max, tc.want)
			}
		})
	}
}
