package podworker

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RuntimeClassGetter reads a RuntimeClass, as the kubelet's runtime
// class manager reads its informer's cache: a missing one is a NotFound
// error (runtimeclass.node.k8s.io "name" not found).
type RuntimeClassGetter interface {
	GetRuntimeClass(name string) (*nodev1.RuntimeClass, error)
}

// errNoRuntimeClasses: a standalone agent cannot resolve a class. The
// kubelet without an API client ignores runtimeClassName and runs the
// pod with the default handler; the agent refuses to run it on a
// runtime the pod did not ask for.
var errNoRuntimeClasses = errors.New("RuntimeClasses cannot be looked up: the agent runs without an API server")

// runtimeHandler is the CRI runtime handler of the pod's sandbox, as the
// kubelet's LookupRuntimeHandler: "" (the runtime's default) without a
// runtimeClassName, else the class's handler.
func runtimeHandler(classes RuntimeClassGetter, pod *v1.Pod) (string, error) {
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return "", nil
	}
	name := *pod.Spec.RuntimeClassName
	if classes == nil {
		return "", fmt.Errorf("RuntimeClass %s: %w", name, errNoRuntimeClasses)
	}
	rc, err := classes.GetRuntimeClass(name)
	if apierrors.IsNotFound(err) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}

// criError is the runtime's own error inside err (what the kubelet's
// events quote: "rpc error: code = ... desc = ..."), else err.
func criError(err error) error {
	if st := grpcStatus(err); st != nil {
		return st.Err()
	}
	return err
}

// grpcStatus is the runtime's gRPC status inside err, nil if there is none.
func grpcStatus(err error) *status.Status {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus()
	}
	return nil
}
