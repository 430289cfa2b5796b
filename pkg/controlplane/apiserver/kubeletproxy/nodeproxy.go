package kubeletproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// nodeProxyMethods are the methods upstream proxies to nodes.
var nodeProxyMethods = []string{
	http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions,
}

// nodeProxy serves nodes/<name>[:port]/proxy[/<path>] as upstream's node
// ProxyREST: to the kubelet API with the API server's kubelet client
// certificate, or to another port of the node without it. Redirects to
// the path with a trailing slash, link rewriting and upgrades are the
// upgrade-aware proxy's.
func (h *connectRequest) nodeProxy(w http.ResponseWriter, r *http.Request) error {
	if err := h.allowMethods(r, nodeProxyMethods...); err != nil {
		return err
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(h.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", h.ri.Name))
	}
	ep, err := h.kubeletFor(r.Context(), name)
	if err != nil {
		return err
	}
	loc, transport := ep.url("", nil), http.RoundTripper(h.Client.transport)
	if port != "" && port != ep.port {
		if err := proxyableHost(r.Context(), ep.host); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if scheme == "" {
			scheme = "http" // what another port most likely serves; upstream leaves it unset and fails
		}
		loc = &url.URL{Scheme: scheme, Host: net.JoinHostPort(ep.host, port)}
		transport = h.Client.other
	}
	loc.Path = nodeProxyPath(r, h.ri.Name)
	proxy.NewUpgradeAwareHandler(loc, transport, true, false, proxyResponder{}).ServeHTTP(w, r)
	return nil
}

// nodeProxyPath is the path below .../nodes/<name>/proxy, trailing slash
// kept; without one, upstream takes the "path" query parameter.
func nodeProxyPath(r *http.Request, name string) string {
	marker := "/nodes/" + name + "/proxy"
	i := strings.Index(r.URL.Path, marker)
	if i < 0 {
		return ""
	}
	rest := r.URL.Path[i+len(marker):]
	if rest == "" {
		rest = r.URL.Query().Get("path")
	}
	if rest != "" && !strings.HasPrefix(rest, "/") {
		rest = "/" + rest
	}
	return rest
}

// errAddressNotAllowed is upstream's refusal to proxy to local addresses.
var errAddressNotAllowed = errors.New("address not allowed")

// proxyableHost refuses, as upstream's IsProxyableHostname, node
// addresses that are loopback or link-local: a port other than the
// kubelet's must not open the API server's own host or the cloud's
// metadata service to whoever may use nodes/proxy.
func proxyableHost(ctx context.Context, host string) error {
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		ip := a.IP
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
			return errAddressNotAllowed
		}
	}
	return nil
}
