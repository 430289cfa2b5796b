package podworker

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodeagent/nodeagent/pkg/credentialprovider"
	"github.com/nodeagent/nodeagent/pkg/pullrecords"
)

// TestPullerPresentImageAccess: an image the agent pulled with a pod's
// secret is used by another pod only if it has that secret or the same
// credential; else it is pulled again with the pod's credentials (here
// none: refused). Images pulled without a secret, and images the agent
// never pulled, are anyone's. The records survive a restart.
func TestPullerPresentImageAccess(t *testing.T) {
	root := t.TempDir()
	img := &authPulls{FakeImageService: critest.NewFakeImageService()}
	img.SetFakeImages([]string{"r.io/preloaded:1"})
	newPuller := func() (*puller, *messageEvents) {
		records, err := openPullRecords(root)
		if err != nil {
			t.Fatal(err)
		}
		ev := &messageEvents{}
		return &puller{images: img, events: ev, keyring: &credentialprovider.Keyring{}, records: records,
			backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}, ev
	}
	p, _ := newPuller()
	withSecret := []v1.Secret{dockerSecret("a", "r.io", "pod-a", "good")}
	withSecret[0].Namespace, withSecret[0].UID = "ns", types.UID("uid-a")
	sameCredential := []v1.Secret{dockerSecret("copy", "r.io", "pod-a", "good")}
	sameCredential[0].Namespace, sameCredential[0].UID = "other", types.UID("uid-copy")
	ensure := func(p *puller, podName, image string, policy v1.PullPolicy, secrets []v1.Secret) error {
		pod := planBasePod()
		pod.UID = types.UID(podName) // a back-off of its own
		_, err := p.ensure(context.Background(), pod, &v1.Container{Name: "c", Image: image, ImagePullPolicy: policy}, nil, secrets)
		return err
	}
	if err := ensure(p, "a", "r.io/private:1", v1.PullIfNotPresent, withSecret); err != nil {
		t.Fatal(err)
	}
	if err := ensure(p, "anon", "r.io/public:1", v1.PullIfNotPresent, nil); err == nil {
		t.Fatal("anonymous pull of a private image: want the registry's refusal")
	}
	img.users = nil
	// "public" is pulled anonymously by another means: the fake refuses
	// anonymous pulls, so record one as the agent would.
	if err := p.records.PullStarted("r.io/public:1"); err != nil {
		t.Fatal(err)
	}
	if err := p.records.Pulled("r.io/public:1", "r.io/public", "r.io/public:1", pullrecords.Credentials{NodePodsAccessible: true}); err != nil {
		t.Fatal(err)
	}
	img.SetFakeImages([]string{"r.io/preloaded:1", "r.io/private:1", "r.io/public:1"})

	p, ev := newPuller() // after a restart
	cases := []struct {
		name, pod, image string
		policy           v1.PullPolicy
		secrets          []v1.Secret
		wantErr          string // pullError reason
		wantPulls        []string
	}{
		{name: "same secret: used", pod: "a2", image: "r.io/private:1", policy: v1.PullIfNotPresent, secrets: withSecret},
		{name: "same credential, other secret: used", pod: "c", image: "r.io/private:1", policy: v1.PullIfNotPresent, secrets: sameCredential},
		{name: "no secret: pulled again, refused", pod: "b", image: "r.io/private:1", policy: v1.PullIfNotPresent,
			wantErr: ReasonErrImagePull, wantPulls: []string{""}},
		{name: "no secret, Never: not present for it", pod: "d", image: "r.io/private:1", policy: v1.PullNever, wantErr: ReasonErrImageNeverPull},
		{name: "pulled without a secret: anyone's", pod: "e", image: "r.io/public:1", policy: v1.PullIfNotPresent},
		{name: "preloaded: anyone's", pod: "f", image: "r.io/preloaded:1", policy: v1.PullIfNotPresent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img.users, ev.got = nil, nil
			err := ensure(p, tc.pod, tc.image, tc.policy, tc.secrets)
			var pe *pullError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantErr != "" && (!errors.As(err, &pe) || pe.Reason != tc.wantErr):
				t.Errorf("err = %v, want %s", err, tc.wantErr)
			}
			if !reflect.DeepEqual(img.users, tc.wantPulls) {
				t.Errorf("pulls as %q, want %q", img.users, tc.wantPulls)
			}
			want := `Normal Pulled: Container image "` + tc.image + `" already present on machine and can be accessed by the pod`
			if tc.wantErr == "" && (len(ev.got) != 1 || ev.got[0] != want) {
				t.Errorf("events %q, want %q", ev.got, want)
			}
		})
	}
}

// TestPullerPresentImageMalformedSecret: the pod's secrets are parsed only
// when the check needs them, as the kubelet's lazy lookup.
func TestPullerPresentImageMalformedSecret(t *testing.T) {
	img := critest.NewFakeImageService()
	img.SetFakeImages([]string{"r.io/preloaded:1"})
	records, err := openPullRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &puller{images: img, events: &messageEvents{}, keyring: &credentialprovider.Keyring{}, records: records,
		backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
	bad := v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{`)}}
	c := &v1.Container{Name: "c", Image: "r.io/preloaded:1", ImagePullPolicy: v1.PullIfNotPresent}
	if _, err := p.ensure(context.Background(), planBasePod(), c, nil, []v1.Secret{bad}); err != nil {
		t.Errorf("preloaded image: %v, want it used without reading the secrets", err)
	}
}

// TestPullerPulledEvent: the kubelet's Pulled event after a pull.
func TestPullerPulledEvent(t *testing.T) {
	ev := &messageEvents{}
	p := &puller{images: critest.NewFakeImageService(), events: ev, keyring: &credentialprovider.Keyring{},
		backoff: flowcontrol.NewBackOff(time.Second, time.Minute)}
	if _, err := p.ensure(context.Background(), planBasePod(), &v1.Container{Name: "c", Image: "busybox:1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^Normal Pulled: Successfully pulled image "busybox:1" in \S+ \(\S+ including waiting\)\. Image size: \d+ bytes\.$`)
	if len(ev.got) != 2 || !want.MatchString(ev.got[1]) {
		t.Errorf("events %q, want Pulling then %s", ev.got, want)
	}
}
