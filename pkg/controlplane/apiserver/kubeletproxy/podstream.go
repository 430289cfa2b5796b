package kubeletproxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// streamOptions are the streams an exec or attach asks for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// podStream proxies pods/exec, attach and portforward to the node's
// kubelet, as upstream's ExecREST, AttachREST and PortForwardREST: the
// connection upgrade (SPDY/3.1, or a WebSocket) goes end to end, except
// that WebSocket v5 exec and attach are translated to SPDY and WebSocket
// port-forward tunnels SPDY, because kubelets may speak only SPDY.
func (h *connectRequest) podStream(w http.ResponseWriter, r *http.Request) error {
	// GET is for browsers and WebSocket clients, POST for SPDY.
	if err := h.allowMethods(r, http.MethodGet, http.MethodPost); err != nil {
		return err
	}
	if err := h.authorizeCreate(r); err != nil {
		return err
	}
	pod, err := h.Pods.GetPod(r.Context(), h.ri.Namespace, h.ri.Name)
	if err != nil {
		return err
	}
	path, query, opts, err := kubeletStreamRequest(pod, h.ri.Subresource, r.URL.Query())
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	ep, err := h.kubeletFor(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc := ep.url(path, query)
	transport := h.Client.transport
	switch {
	case h.ri.Subresource == "portforward" && wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
		tunnelPortForward(w, r, loc, transport)
	case h.ri.Subresource != "portforward" && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r):
		translateStream(w, r, loc, transport, opts)
	default:
		proxy.NewUpgradeAwareHandler(loc, transport, false, true, proxyResponder{}).ServeHTTP(w, r)
	}
	return nil
}

// authorizeCreate checks "create" for a GET as well: WebSocket clients use
// GET, which authorizes as "get", and upstream checks "create" too so that
// policies written for SPDY's POST keep holding (kubernetes#133515).
func (h *connectRequest) authorizeCreate(r *http.Request) error {
	if h.ri.Verb == "create" {
		return nil
	}
	ri := h.ri
	ri.Verb = "create"
	return h.Authorizer.Authorize(r, ri)
}

// kubeletStreamRequest maps the request's options to the kubelet's path
// and query (upstream's streamLocation and PortForwardLocation).
func kubeletStreamRequest(pod *v1.Pod, sub string, q url.Values) (string, url.Values, streamOptions, error) {
	if sub == "portforward" {
		ports, err := int32Params(q, "ports")
		if err != nil {
			return "", nil, streamOptions{}, err
		}
		return fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), portForwardQuery(ports), streamOptions{}, nil
	}
	// Upstream defaults stdout and stderr after reading the query, so
	// both are always on; a kubelet drops stderr when tty is set.
	opts := streamOptions{stdin: boolParam(q, "stdin"), stdout: true, stderr: true, tty: boolParam(q, "tty")}
	container, err := podContainer(pod, q.Get("container"))
	if err != nil {
		return "", nil, streamOptions{}, err
	}
	kq := execQuery(opts)
	if sub == "exec" {
		kq[v1.ExecCommandParam] = q["command"]
	}
	return fmt.Sprintf("/%s/%s/%s/%s", sub, pod.Namespace, pod.Name, container), kq, opts, nil
}

// execQuery names the streams the kubelet's way (input, output, error, tty).
func execQuery(o streamOptions) url.Values {
	q := url.Values{}
	for _, p := range []struct {
		on   bool
		name string
	}{{o.stdin, v1.ExecStdinParam}, {o.stdout, v1.ExecStdoutParam}, {o.stderr, v1.ExecStderrParam}, {o.tty, v1.ExecTTYParam}} {
		if p.on {
			q.Set(p.name, "1")
		}
	}
	return q
}

// portForwardQuery passes the requested ports as the kubelet's "port".
func portForwardQuery(ports []int32) url.Values {
	q := url.Values{}
	if len(ports) == 0 {
		return q
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	q.Set(v1.PortHeader, strings.Join(s, ","))
	return q
}
