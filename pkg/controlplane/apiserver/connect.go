package apiserver

import (
	"errors"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// The subresources served by the node's kubelet, which the API server
// proxies to it (upstream's "connect" subresources, plus pods/log which
// upstream streams with a GET).
var podStreams = []string{"log", "exec", "attach", "portforward"}

// isConnect reports whether the request goes to a node's kubelet. These
// requests are long-lived streams: they are served before the bounded
// request context and the verb dispatch.
func (h *resourceHandler) isConnect() bool {
	switch {
	case h.res.GVK.Group != "":
		return false
	case h.res.Plural == "pods":
		return slices.Contains(podStreams, h.ri.Subresource)
	case h.res.Plural == "nodes":
		return h.ri.Subresource == "proxy"
	}
	return false
}

// connect serves pods/log, exec, attach, portforward and nodes/proxy.
func (h *resourceHandler) connect(w http.ResponseWriter, r *http.Request) {
	var err error
	switch h.ri.Subresource {
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
func (h *resourceHandler) allowMethods(r *http.Request, methods ...string) error {
	if slices.Contains(methods, r.Method) {
		return nil
	}
	return apierrors.NewMethodNotSupported(groupResource(h.res), r.Method)
}
