package apiserver

import (
	"context"
	"net/http"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/kubeletproxy"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// isConnect reports whether the request goes to a node's kubelet
// (pods/log, exec, attach, portforward, nodes/proxy): long-lived streams,
// served before the bounded request context and the verb dispatch.
func (h *resourceHandler) isConnect() bool {
	return kubeletproxy.IsConnect(h.res.GVK.Group, h.res.Plural, h.ri.Subresource)
}

// connect hands the request to the kubelet proxy, which reads pods and
// nodes from storage and authorizes its secondary checks as the server.
func (h *resourceHandler) connect(w http.ResponseWriter, r *http.Request) {
	p := &kubeletproxy.Proxy{Client: h.s.kubelet, Pods: storeGetter{h.s}, Nodes: storeGetter{h.s}, Authorizer: resourceAuthorizer{h.s, h.res}}
	p.Serve(w, r, h.ri)
}

// storeGetter reads pods and nodes for the kubelet proxy.
type storeGetter struct{ s *Server }

func (g storeGetter) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	obj, err := g.s.store("/v1/pods").Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Pod), nil
}

func (g storeGetter) GetNode(ctx context.Context, name string) (*v1.Node, error) {
	obj, err := g.s.store("/v1/nodes").Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Node), nil
}

// resourceAuthorizer authorizes other attributes of a request for res.
type resourceAuthorizer struct {
	s   *Server
	res *registry.Resource
}

func (a resourceAuthorizer) Authorize(r *http.Request, ri request.Info) error {
	return a.s.authorize(r, a.res, ri)
}
