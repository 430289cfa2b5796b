package volume

import (
	"context"
	"errors"
	"maps"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

const projectedPluginName = "kubernetes.io/projected"

// defaultTokenExpirationSeconds is the API's default lifetime of a
// projected service account token.
const defaultTokenExpirationSeconds int64 = 3600

// projectedPlugin merges config maps, secrets, downward API fields and
// service account tokens into one volume, on a tmpfs.
type projectedPlugin struct {
	getter      Getter
	allocatable v1.ResourceList
	tokens      *tokenCache
	data        dataVolume
}

func newProjectedPlugin(host Host, tokens *tokenCache) *projectedPlugin {
	return &projectedPlugin{
		getter:      host.Getter,
		allocatable: host.Allocatable,
		tokens:      tokens,
		data:        dataVolume{mounter: host.Mounter, allocatable: host.Allocatable, memory: true},
	}
}

func (p *projectedPlugin) Name() string { return projectedPluginName }

func (p *projectedPlugin) CanSupport(v *v1.Volume) bool { return v.Projected != nil }

// SetUp collects every source and (re)writes the volume; called on every
// sync, it propagates updates and renews tokens when due.
func (p *projectedPlugin) SetUp(ctx context.Context, c SetUpContext) (string, error) {
	payload, err := p.collect(ctx, c)
	if err != nil {
		return "", err
	}
	if err := p.data.write(c, payload); err != nil {
		return "", err
	}
	return c.Dir, nil
}

// TearDown also forgets the pod's tokens.
func (p *projectedPlugin) TearDown(dir string) error {
	if err := p.data.tearDown(dir); err != nil {
		return err
	}
	p.tokens.forgetPod(podUIDOf(dir))
	return nil
}

// podUIDOf reads the pod UID from <root>/pods/<uid>/volumes/<plugin>/<name>.
func podUIDOf(volumeDir string) types.UID {
	return types.UID(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(volumeDir)))))
}

// collect builds the payload of every source (later sources win a path),
// reporting all failing sources together, as the kubelet does.
func (p *projectedPlugin) collect(ctx context.Context, c SetUpContext) (map[string]FileProjection, error) {
	src := c.Volume.Projected
	defaultMode := fileMode(src.DefaultMode)
	payload := map[string]FileProjection{}
	var errs []error
	for i := range src.Sources {
		part, err := p.source(ctx, c, &src.Sources[i], defaultMode)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps.Copy(payload, part)
	}
	return payload, utilerrors.NewAggregate(errs)
}

func (p *projectedPlugin) source(ctx context.Context, c SetUpContext, s *v1.VolumeProjection, defaultMode int32) (map[string]FileProjection, error) {
	switch {
	case s.ConfigMap != nil:
		return p.configMap(ctx, c, s.ConfigMap, defaultMode)
	case s.Secret != nil:
		return p.secret(ctx, c, s.Secret, defaultMode)
	case s.DownwardAPI != nil:
		in := downwardInputs{pod: c.Pod, podIPs: c.PodIPs, allocatable: p.allocatable}
		return downwardAPIPayload(s.DownwardAPI.Items, in, defaultMode)
	case s.ServiceAccountToken != nil:
		return p.token(ctx, c, s.ServiceAccountToken, defaultMode)
	case s.ClusterTrustBundle != nil:
		return nil, errors.New("clusterTrustBundle projections are not supported by this node agent")
	case s.PodCertificate != nil:
		return nil, errors.New("podCertificate projections are not supported by this node agent")
	}
	return nil, nil
}

func (p *projectedPlugin) configMap(ctx context.Context, c SetUpContext, s *v1.ConfigMapProjection, defaultMode int32) (map[string]FileProjection, error) {
	if p.getter == nil {
		return nil, noClientError("projected", c.Volume.Name)
	}
	optional := isOptional(s.Optional)
	cm, err := fetchConfigMap(ctx, p.getter, c.Pod.Namespace, s.Name, optional)
	if err != nil {
		return nil, err
	}
	return configMapPayload(s.Items, cm, defaultMode, optional)
}

func (p *projectedPlugin) secret(ctx context.Context, c SetUpContext, s *v1.SecretProjection, defaultMode int32) (map[string]FileProjection, error) {
	if p.getter == nil {
		return nil, noClientError("projected", c.Volume.Name)
	}
	optional := isOptional(s.Optional)
	sec, err := fetchSecret(ctx, p.getter, c.Pod.Namespace, s.Name, optional)
	if err != nil {
		return nil, err
	}
	return secretPayload(s.Items, sec, defaultMode, optional)
}

// token writes a service account token bound to the pod. With an fsGroup
// or a single runAsUser the file is 0600, owned by that user and made
// group-readable by the fsGroup change: non-root users can read their
// token, nobody else.
func (p *projectedPlugin) token(ctx context.Context, c SetUpContext, s *v1.ServiceAccountTokenProjection, defaultMode int32) (map[string]FileProjection, error) {
	tr, err := p.tokens.get(ctx, p.getter, c.Pod.Namespace, c.Pod.Spec.ServiceAccountName, tokenRequestFor(c.Pod, s))
	if err != nil {
		return nil, err
	}
	fsUser := fsUserOf(c.Pod)
	fsGroup, _ := podFSGroup(c.Pod)
	mode := defaultMode
	if fsUser != nil || fsGroup != nil {
		mode = 0o600
	}
	return map[string]FileProjection{
		s.Path: {Data: []byte(tr.Status.Token), Mode: mode, FsUser: fsUser},
	}, nil
}

func tokenRequestFor(pod *v1.Pod, s *v1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	exp := defaultTokenExpirationSeconds
	if s.ExpirationSeconds != nil {
		exp = *s.ExpirationSeconds
	}
	var auds []string
	if s.Audience != "" {
		auds = []string{s.Audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         auds,
		ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		},
	}}
}

// fsUserOf is the user every container of the pod runs as, if they all
// declare the same one (pod or container runAsUser); nil otherwise.
func fsUserOf(pod *v1.Pod) *int64 {
	var user *int64
	for _, c := range allContainerSecurity(pod) {
		u := effectiveRunAsUser(pod, c)
		if u == nil || (user != nil && *user != *u) {
			return nil
		}
		user = u
	}
	return user
}

func allContainerSecurity(pod *v1.Pod) []*v1.SecurityContext {
	var out []*v1.SecurityContext
	for i := range pod.Spec.InitContainers {
		out = append(out, pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		out = append(out, pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, pod.Spec.EphemeralContainers[i].SecurityContext)
	}
	return out
}

func effectiveRunAsUser(pod *v1.Pod, sc *v1.SecurityContext) *int64 {
	if sc != nil && sc.RunAsUser != nil {
		return sc.RunAsUser
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}
