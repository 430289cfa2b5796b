package agent

import (
	"context"
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/apiclient"
	"github.com/nodeagent/nodeagent/pkg/objectmanager"
)

// managedObjects is the getter of the volumes and the pod workers: config
// maps and secrets from the object managers (configMapAndSecretChangeDetectionStrategy),
// tokens, claims and volumes straight from the API.
type managedObjects struct {
	apiclient.Objects
	managers *objectmanager.Manager
}

func (o managedObjects) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	return o.managers.GetConfigMap(ctx, ns, name)
}

func (o managedObjects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return o.managers.GetSecret(ctx, ns, name)
}

// newObjectManagers builds the config map and secret managers as the
// kubelet does: watches dropped after five idle sync periods, and the
// Cache strategy's TTL from the node's annotation.
func newObjectManagers(cfg *agentconfig.Config, api *apiclient.API, log *slog.Logger) (*objectmanager.Manager, error) {
	return objectmanager.New(objectmanager.Config{
		Client:       api.Objects.Client,
		Strategy:     objectmanager.Strategy(cfg.ConfigMapAndSecretChangeDetectionStrategy),
		ResyncPeriod: cfg.SyncFrequency.Duration,
		TTL:          objectmanager.TTLFromNode(func(ctx context.Context) (*v1.Node, error) { return api.Watch.Node(ctx, false) }),
		Logger:       log,
	})
}
