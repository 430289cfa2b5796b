package podworker

import (
	"context"
	"fmt"
	"sync"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// RuntimeFeatures is what the runtime announces in its CRI Status
// response, as the kubelet keeps it in its runtime state: the runtime-wide
// features and, per runtime handler, whether it supports user namespaces.
type RuntimeFeatures struct {
	// SupplementalGroupsPolicy: the runtime honours Strict (and reports
	// the container's user); the kubelet publishes it as the Node's
	// status.features.supplementalGroupsPolicy.
	SupplementalGroupsPolicy bool
	// UserNamespaces maps each handler the runtime reports to whether it
	// supports user namespaces; empty when the runtime reports no
	// handlers (an old runtime such as containerd 1.6).
	UserNamespaces map[string]bool
}

// FeaturesFromStatus reads the features out of a CRI Status response.
func FeaturesFromStatus(resp *criv1.StatusResponse) RuntimeFeatures {
	f := RuntimeFeatures{SupplementalGroupsPolicy: resp.GetFeatures().GetSupplementalGroupsPolicy()}
	for _, h := range resp.GetRuntimeHandlers() {
		if f.UserNamespaces == nil {
			f.UserNamespaces = map[string]bool{}
		}
		f.UserNamespaces[h.GetName()] = h.GetFeatures().GetUserNamespaces()
	}
	return f
}

// statusTimeout bounds the CRI Status call that reads the features.
const statusTimeout = 5 * time.Second

// featureCache reads the runtime's features once it answers and keeps
// them: they change only with the runtime's binary.
type featureCache struct {
	rt runtime.Runtime

	mu   sync.Mutex
	have bool
	f    RuntimeFeatures
}

func (c *featureCache) get(ctx context.Context) (RuntimeFeatures, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.have {
		return c.f, nil
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := c.rt.Status(ctx, false)
	if err != nil {
		return RuntimeFeatures{}, fmt.Errorf("runtime status: %w", err)
	}
	c.f, c.have = FeaturesFromStatus(resp), true
	return c.f, nil
}
