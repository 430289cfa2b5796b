package podworker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// Image pull failure reasons, as the kubelet reports them.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
	ReasonImageInspectError = "ImageInspectError"
)

// pullError carries the container waiting reason for a failed pull.
type pullError struct {
	Reason  string
	Message string
}

func (e *pullError) Error() string { return e.Message }

// puller ensures images are present, honouring pull policy, credentials
// and a per-image back-off after failures.
type puller struct {
	images  runtime.Images
	backoff *flowcontrol.Backoff
	keyring *keyring
	serial  *sync.Mutex // set when pulls are serialized (the kubelet's default)
	limiter flowcontrol.RateLimiter
	events  EventRecorder
	metrics Observer // nil in tests of the puller alone
}

// ensure returns the image reference to create the container from.
func (p *puller) ensure(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *criv1.PodSandboxConfig) (string, error) {
	if _, err := name.ParseReference(c.Image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return "", &pullError{ReasonInvalidImageName, msg}
	}
	spec := &criv1.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	present, err := p.images.ImageStatus(ctx, spec, false)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return "", &pullError{ReasonImageInspectError, msg}
	}
	ref := present.GetImage().GetId()
	if ref != "" && c.ImagePullPolicy != v1.PullAlways {
		p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return ref, nil
	}
	if ref == "" && c.ImagePullPolicy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, ReasonErrImageNeverPull, "%s", msg)
		return "", &pullError{ReasonErrImageNeverPull, msg}
	}
	key := pullKey(pod, c)
	if p.backoff.IsInBackOffSinceUpdate(key, p.backoff.Clock.Now()) {
		p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "BackOff", "Back-off pulling image %q", c.Image)
		return "", &pullError{ReasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q", c.Image)}
	}
	return p.pull(ctx, pod, c, spec, sb, key)
}

func (p *puller) pull(ctx context.Context, pod *v1.Pod, c *v1.Container, spec *criv1.ImageSpec, sb *criv1.PodSandboxConfig, key string) (string, error) {
	queued := time.Now() // the kubelet's pull duration includes the wait for a turn
	if p.metrics != nil {
		p.metrics.ImagePullStarted(pod.UID)
	}
	if p.serial != nil {
		p.serial.Lock()
		defer p.serial.Unlock()
	}
	if p.limiter != nil && !p.limiter.TryAccept() {
		msg := fmt.Sprintf("Failed to pull image %q: pull QPS exceeded", c.Image)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "%s", msg)
		return "", &pullError{ReasonErrImagePull, msg}
	}
	p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	ref, err := p.images.PullImage(ctx, spec, p.keyring.lookup(c.Image), sb)
	if err != nil {
		p.backoff.Next(key, p.backoff.Clock.Now())
		msg := fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "%s", msg)
		return "", &pullError{ReasonErrImagePull, msg}
	}
	p.backoff.Reset(key)
	if p.metrics != nil {
		p.metrics.ImagePullFinished(pod.UID, time.Since(queued), p.imageSize(ctx, ref))
	}
	p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
	return ref, nil
}

// pullBackoff is how long the container's image pull is backing off.
func (p *puller) pullBackoff(pod *v1.Pod, c *v1.Container) time.Duration {
	return p.backoff.Get(pullKey(pod, c))
}

// pullKey scopes the pull back-off to one pod's image, as the kubelet
// does, so one pod's failures do not delay another's pull.
func pullKey(pod *v1.Pod, c *v1.Container) string { return string(pod.UID) + "_" + c.Image }

// keyring holds registry credentials from docker-style config.json files,
// the kubelet's node-level credential source.
type keyring struct {
	auths map[string]dockerAuth // registry host -> credentials
}

type dockerAuth struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// loadKeyring reads the first config.json among paths that exists.
func loadKeyring(paths ...string) (*keyring, error) {
	k := &keyring{auths: map[string]dockerAuth{}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return k, fmt.Errorf("read registry credentials %s: %w", p, err)
		}
		var f struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			return k, fmt.Errorf("parse registry credentials %s: %w", p, err)
		}
		for host, a := range f.Auths {
			k.auths[registryHost(host)] = a
		}
		return k, nil
	}
	return k, nil
}

// defaultKeyringPaths are where the kubelet looks for config.json.
func defaultKeyringPaths(rootDir string) []string {
	paths := []string{filepath.Join(rootDir, "config.json")}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".docker", "config.json"))
	}
	return append(paths, "/.docker/config.json")
}

// registryHost normalises "https://index.docker.io/v1/" and "host:port/path"
// keys to the bare host.
func registryHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	if host == "index.docker.io" || host == "docker.io" {
		return name.DefaultRegistry
	}
	return host
}

func (k *keyring) lookup(image string) *criv1.AuthConfig {
	if k == nil || len(k.auths) == 0 {
		return nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil
	}
	a, ok := k.auths[ref.Context().RegistryStr()]
	if !ok {
		return nil
	}
	if a.Auth != "" {
		if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if u, p, ok := strings.Cut(string(dec), ":"); ok {
				return &criv1.AuthConfig{Username: u, Password: p}
			}
		}
	}
	return &criv1.AuthConfig{Username: a.Username, Password: a.Password}
}

// imageSize is the pulled image's size for the pull duration metric's
// label, as the kubelet asks for it; 0 when the runtime does not say.
func (p *puller) imageSize(ctx context.Context, ref string) uint64 {
	st, err := p.images.ImageStatus(ctx, &criv1.ImageSpec{Image: ref}, false)
	if err != nil {
		return 0
	}
	return st.GetImage().GetSize()
}
