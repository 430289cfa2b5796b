package podworker

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// fetchEnvObjects reads the config maps and secrets named in the
// container's env and envFrom. A missing object is recorded as nil (client-go
// returns an empty object with its NotFound, which would read as an object
// without the key); other errors fail the container's start.
func fetchEnvObjects(ctx context.Context, get volume.Getter, ns string, c *v1.Container) (criconfig.EnvObjects, error) {
	objs := criconfig.EnvObjects{ConfigMaps: map[string]*v1.ConfigMap{}, Secrets: map[string]*v1.Secret{}}
	cms, secrets := criconfig.EnvRefs(c)
	if get == nil && len(cms)+len(secrets) > 0 {
		return objs, &criconfig.ConfigError{Msg: "config maps and secrets need the API server: this agent runs standalone"}
	}
	for _, name := range cms {
		cm, err := get.GetConfigMap(ctx, ns, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return objs, fmt.Errorf("get configmap %s/%s: %w", ns, name, err)
		}
		if err != nil {
			cm = nil
		}
		objs.ConfigMaps[name] = cm
	}
	for _, name := range secrets {
		s, err := get.GetSecret(ctx, ns, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return objs, fmt.Errorf("get secret %s/%s: %w", ns, name, err)
		}
		if err != nil {
			s = nil
		}
		objs.Secrets[name] = s
	}
	return objs, nil
}
