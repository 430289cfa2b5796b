package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const secretPluginName = "kubernetes.io/secret"

// secretPlugin projects a secret's keys as files on a tmpfs.
type secretPlugin struct {
	getter Getter
	data   dataVolume
}

func newSecretPlugin(host Host) *secretPlugin {
	return &secretPlugin{
		getter: host.Getter,
		data:   dataVolume{mounter: host.Mounter, allocatable: host.Allocatable, memory: true},
	}
}

func (p *secretPlugin) Name() string { return secretPluginName }

func (p *secretPlugin) CanSupport(v *v1.Volume) bool { return v.Secret != nil }

// SetUp fetches the secret and (re)writes the volume; called on every
// sync, it propagates updates.
func (p *secretPlugin) SetUp(ctx context.Context, c SetUpContext) (string, error) {
	if p.getter == nil {
		return "", noClientError("secret", c.Volume.Name)
	}
	src := c.Volume.Secret
	optional := isOptional(src.Optional)
	s, err := fetchSecret(ctx, p.getter, c.Pod.Namespace, src.SecretName, optional)
	if err != nil {
		return "", err
	}
	payload, err := secretPayload(src.Items, s, fileMode(src.DefaultMode), optional)
	if err != nil {
		return "", err
	}
	if err := p.data.write(c, payload); err != nil {
		return "", err
	}
	return c.Dir, nil
}

func (p *secretPlugin) TearDown(dir string) error { return p.data.tearDown(dir) }

// fetchSecret reads the secret; an optional one that does not exist is
// empty.
func fetchSecret(ctx context.Context, g Getter, ns, name string, optional bool) (*v1.Secret, error) {
	s, err := g.GetSecret(ctx, ns, name)
	if err == nil {
		return s, nil
	}
	if optional && apierrors.IsNotFound(err) {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
	}
	return nil, objectError(err, "secret", name)
}

// secretPayload maps the secret's data to files: every key under its own
// name, or only the listed items at their paths. A listed key that is
// missing fails unless the source is optional.
func secretPayload(items []v1.KeyToPath, s *v1.Secret, defaultMode int32, optional bool) (map[string]FileProjection, error) {
	payload := make(map[string]FileProjection, len(s.Data))
	if len(items) == 0 {
		for k, v := range s.Data {
			payload[k] = FileProjection{Data: v, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		data, ok := s.Data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s", it.Key)
		}
		payload[it.Path] = FileProjection{Data: data, Mode: itemMode(it.Mode, defaultMode)}
	}
	return payload, nil
}
