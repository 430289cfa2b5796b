package podworker

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// ServiceLister is what the service environment variables are built
// from: the cluster's services, as an informer knows them (read only).
type ServiceLister interface {
	ListServices() ([]*v1.Service, error)
	// HasSynced reports whether the services have been listed once.
	HasSynced() bool
}

// errServicesNotSynced fails a container's start until the services are
// known, as the kubelet does for pods from the API server, so that a pod
// seen right after the agent starts still gets KUBERNETES_SERVICE_HOST.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// podServices are the services a container of the pod starts with: none
// standalone (no lister, as the kubelet without an API server); a static
// pod does not wait for the first list, as upstream.
func podServices(l ServiceLister, pod *v1.Pod) ([]*v1.Service, error) {
	if l == nil {
		return nil, nil
	}
	if !podutil.IsStatic(pod) && !l.HasSynced() {
		return nil, errServicesNotSynced
	}
	svcs, err := l.ListServices()
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	return svcs, nil
}
