package podworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/flowcontrol"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/credentialprovider"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/pullrecords"
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
	keyring *credentialprovider.Keyring // the node's
	// slots bound the pulls at once: one when serialized (the kubelet's
	// default), maxParallelImagePulls otherwise; nil: no bound.
	slots   chan struct{}
	limiter flowcontrol.RateLimiter
	events  EventRecorder
	metrics Observer // nil in tests of the puller alone
	tracer  Tracer   // nil in tests of the puller alone
	// records are the images pulled and with what (nil: any pod may use
	// any image present, the kubelet's NeverVerify).
	records *pullrecords.Store
	// lastErr is the last failed pull's "reason: message" by back-off key,
	// which the kubelet adds to the ImagePullBackOff message.
	lastErr sync.Map
}

// ensure returns the image reference to create the container from,
// pulling with the pod's pull secrets and the node's credentials.
func (p *puller) ensure(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *criv1.PodSandboxConfig, secrets []v1.Secret) (_ string, retErr error) {
	step := &podtrace.Step{Name: podtrace.StepPull, Container: c.Name, Start: time.Now(), Detail: fmt.Sprintf("image %q", c.Image)}
	if p.tracer != nil {
		defer func() { traceStep(p.tracer, time.Now(), pod, *step, retErr) }()
	}
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
	// Looked up once, when first needed, as the kubelet does.
	lookup := sync.OnceValues(func() ([]credentialprovider.AuthConfig, error) { return p.credentials(c.Image, secrets) })
	if ref != "" && c.ImagePullPolicy != v1.PullAlways {
		usable, err := p.presentUsable(c.Image, ref, lookup)
		if err != nil {
			return "", credentialsError(err)
		}
		if usable {
			step.Detail, step.Attrs = step.Detail+" present (cache hit)", map[string]string{"cache.hit": "true"}
			p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulled", "%s", p.presentMessage(c.Image))
			return ref, nil
		}
		ref = "" // present, but this pod must show it can pull it
	}
	if ref == "" && c.ImagePullPolicy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, ReasonErrImageNeverPull, "%s", msg)
		return "", &pullError{ReasonErrImageNeverPull, msg}
	}
	// Before the back-off, as the kubelet looks credentials up.
	creds, err := lookup()
	if err != nil {
		return "", credentialsError(err)
	}
	key := pullKey(pod, c)
	if p.backoff.IsInBackOffSinceUpdate(key, p.backoff.Clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "BackOff", "%s", msg)
		if prev, ok := p.lastErr.Load(key); ok {
			msg += ": " + prev.(string)
		}
		return "", &pullError{ReasonImagePullBackOff, msg}
	}
	p.lastErr.Delete(key)
	return p.pull(ctx, pod, c, pullRequest{spec: spec, sandbox: sb, key: key, creds: creds, step: step})
}

// pullRequest is one pull's image, sandbox, back-off key and credentials.
type pullRequest struct {
	spec    *criv1.ImageSpec
	sandbox *criv1.PodSandboxConfig
	key     string
	creds   []credentialprovider.AuthConfig
	step    *podtrace.Step // the trace's, which the pull completes
}

func (p *puller) pull(ctx context.Context, pod *v1.Pod, c *v1.Container, r pullRequest) (string, error) {
	queued := time.Now() // the kubelet's pull duration includes the wait for a turn
	if p.metrics != nil {
		p.metrics.ImagePullStarted(pod.UID)
	}
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-ctx.Done():
			return "", fmt.Errorf("wait for an image pull slot: %w", ctx.Err())
		}
	}
	if err := p.pullStarted(c.Image); err != nil {
		return "", err
	}
	p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	ref, used, err := p.throttledPull(ctx, r)
	p.pullEnded(c.Image, ref, used, err)
	if err != nil {
		p.backoff.Next(r.key, p.backoff.Clock.Now())
		p.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		// The status says the runtime's error, the event which image.
		p.lastErr.Store(r.key, ReasonErrImagePull+": "+err.Error())
		return "", &pullError{ReasonErrImagePull, err.Error()}
	}
	pulled, total := time.Since(start), time.Since(queued)
	p.backoff.Reset(r.key)
	size := p.imageSize(ctx, ref)
	if p.metrics != nil {
		p.metrics.ImagePullFinished(pod.UID, total, size)
	}
	if r.step != nil {
		r.step.Detail += fmt.Sprintf(" pulled: %d bytes in %v (%v including waiting)", size, pulled.Truncate(time.Millisecond), total.Truncate(time.Millisecond))
		r.step.Attrs = map[string]string{"cache.hit": "false", "image.size": fmt.Sprint(size)}
	}
	p.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		c.Image, pulled.Truncate(time.Millisecond), total.Truncate(time.Millisecond), size)
	return ref, nil
}

// pullBackoff is how long the container's image pull is backing off.
func (p *puller) pullBackoff(pod *v1.Pod, c *v1.Container) time.Duration {
	return p.backoff.Get(pullKey(pod, c))
}

// pullKey scopes the pull back-off to one pod's image, as the kubelet
// does, so one pod's failures do not delay another's pull.
func pullKey(pod *v1.Pod, c *v1.Container) string { return string(pod.UID) + "_" + c.Image }

// loadKeyring reads the first config.json among paths that exists: the
// node's credentials, the kubelet's default keyring.
func loadKeyring(paths ...string) (*credentialprovider.Keyring, error) {
	k := &credentialprovider.Keyring{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return k, fmt.Errorf("read registry credentials %s: %w", p, err)
		}
		var f credentialprovider.ConfigJSON
		if err := json.Unmarshal(b, &f); err != nil {
			return k, fmt.Errorf("parse registry credentials %s: %w", p, err)
		}
		k.Add(nil, f.Auths)
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

// credentialsError is the kubelet's start error for pull secrets that do
// not parse: the parse error itself, which is the waiting reason too.
func credentialsError(err error) error { return &pullError{err.Error(), err.Error()} }

// credentials are what to try for the image, in order: the pod's pull
// secrets' before the node's, as the kubelet unions its keyrings. An
// unparsable secret is the kubelet's error for the pull.
func (p *puller) credentials(image string, secrets []v1.Secret) ([]credentialprovider.AuthConfig, error) {
	repo, err := credentialprovider.RepoToPull(image)
	if err != nil {
		return nil, err
	}
	fromPod, err := credentialprovider.FromSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return credentialprovider.Lookup(repo, fromPod, p.keyring), nil
}

// throttledPull is a failed pull when over registryPullQPS, as the
// kubelet's throttled image service fails it.
func (p *puller) throttledPull(ctx context.Context, r pullRequest) (string, *credentialprovider.AuthConfig, error) {
	if p.limiter != nil && !p.limiter.TryAccept() {
		return "", nil, errors.New("pull QPS exceeded")
	}
	return p.pullWith(ctx, r.spec, r.creds, r.sandbox)
}

// pullWith pulls without credentials when there are none, else with each
// in turn until one works, as the kubelet does: it never falls back to an
// anonymous pull, and reports every attempt's error. It says which
// credential worked (nil: anonymous).
func (p *puller) pullWith(ctx context.Context, spec *criv1.ImageSpec, creds []credentialprovider.AuthConfig, sb *criv1.PodSandboxConfig) (string, *credentialprovider.AuthConfig, error) {
	if len(creds) == 0 {
		ref, err := p.images.PullImage(ctx, spec, nil, sb)
		return ref, nil, err
	}
	var errs []error
	for i, c := range creds {
		ref, err := p.images.PullImage(ctx, spec, &criv1.AuthConfig{Username: c.Username, Password: c.Password}, sb)
		if err == nil {
			return ref, &creds[i], nil
		}
		errs = append(errs, err)
	}
	return "", nil, utilerrors.NewAggregate(errs)
}

// ReasonFailedToRetrieveImagePullSecret is the kubelet's event when some of
// a pod's image pull secrets cannot be read.
const ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// pullSecrets reads the pod's image pull secrets through the API, as the
// kubelet does on each sync. Those it cannot read (missing, forbidden, no
// API: a standalone agent) are named in one Warning event and left out;
// the pull goes on without them. A static pod's are read the same way:
// the node authorizer lets the node read only what its API pods name.
func (w *worker) pullSecrets(ctx context.Context, pod *v1.Pod) []v1.Secret {
	var secrets []v1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue // validation lets empty names through; the kubelet skips them quietly
		}
		s, err := w.getSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			w.log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "secret", ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		secrets = append(secrets, *s)
	}
	if len(failed) > 0 {
		w.d.events.Eventf(pod, v1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return secrets
}

func (w *worker) getSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	if w.d.objects == nil {
		return nil, errors.New("no API server to read secrets from")
	}
	return w.d.objects.GetSecret(ctx, ns, name)
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
