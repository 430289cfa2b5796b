package kubeletproxy

import (
	"context"
	"errors"
	"net/http"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// PodGetter reads the pod a log, exec, attach or portforward is for; its
// errors (NotFound) are the client's answer.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
}

// NodeGetter reads the node whose kubelet is reached.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*v1.Node, error)
}

// Authorizer authorizes the request for other attributes than its own:
// the secondary "create" check of exec, attach and portforward.
type Authorizer interface {
	Authorize(r *http.Request, ri request.Info) error
}

// Proxy serves the requests that go to a node's kubelet. The API server
// has authenticated and authorized them (as their own verb) before.
type Proxy struct {
	Client     *Client
	Pods       PodGetter
	Nodes      NodeGetter
	Authorizer Authorizer
}

// The subresources served by the node's kubelet, which the API server
// proxies to it (upstream's "connect" subresources, plus pods/log which
// upstream streams with a GET).
var podStreams = []string{"log", "exec", "attach", "portforward"}

// IsConnect reports whether a request for the subresource of the
// resource (group, plural) goes to a node's kubelet. These requests are
// long-lived streams: they are served before the bounded request context
// and the verb dispatch.
func IsConnect(group, plural, subresource string) bool {
	switch {
	case group != "":
		return false
	case plural == "pods":
		return slices.Contains(podStreams, subresource)
	case plural == "nodes":
		return subresource == "proxy"
	}
	return false
}

// connectRequest is one request being served.
type connectRequest struct {
	*Proxy
	ri request.Info
}

// Serve serves pods/log, exec, attach, portforward and nodes/proxy (ri is
// the request's, IsConnect of it true).
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, ri request.Info) {
	h := &connectRequest{Proxy: p, ri: ri}
	var err error
	switch ri.Subresource {
	case "log":
		err = h.podLog(w, r)
	case "proxy":
		err = h.nodeProxy(w, r)
	default:
		err = h.podStream(w, r)
	}
	if err != nil {
		responsewriters.WriteError(w, connectError(err))
	}
}

// kubeletFor looks the node up and picks its kubelet address and port,
// as upstream's NodeConnectionInfoGetter does.
func (h *connectRequest) kubeletFor(ctx context.Context, nodeName string) (kubeletEndpoint, error) {
	node, err := h.Nodes.GetNode(ctx, nodeName)
	if err != nil {
		return kubeletEndpoint{}, err
	}
	return h.Client.endpoint(node)
}

// connectError gives errors that are not API statuses (dial failures,
// missing node addresses) the status upstream gives them: a 500 whose
// message is the error itself, which kubectl prints as
// "Error from server: <message>".
func connectError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}

// proxyResponder writes the upgrade-aware proxy's errors as statuses.
type proxyResponder struct{}

func (proxyResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	responsewriters.WriteError(w, connectError(err))
}

// allowMethods refuses other methods with upstream's 405.
func (h *connectRequest) allowMethods(r *http.Request, methods ...string) error {
	if slices.Contains(methods, r.Method) {
		return nil
	}
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.ri.Group, Resource: h.ri.Resource}, r.Method)
}
