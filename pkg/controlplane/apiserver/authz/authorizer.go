package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Decision is an authorizer's answer, as upstream's authorizer.Decision.
type Decision int

const (
	// DecisionNoOpinion leaves the request to the next authorizer.
	DecisionNoOpinion Decision = iota
	// DecisionAllow lets the request through; no later authorizer is asked.
	DecisionAllow
	// DecisionDeny refuses the request; no later authorizer is asked.
	DecisionDeny
)

// Attributes are what an authorizer sees of one request, as upstream's
// authorizer.Attributes: a resource request (Resource set) or a request
// for a non-resource path.
type Attributes struct {
	User request.User
	Verb string // get, list, watch, create, ...; a non-resource request's method in lower case

	// Resource is the resource asked for; nil for a non-resource request.
	Resource    *registry.Resource
	Namespace   string
	Name        string
	Subresource string
	// FieldSelector is the request's raw fieldSelector: a node may list
	// and watch pods only with spec.nodeName=<node>.
	FieldSelector string

	// Path is a non-resource request's URL path (e.g. /metrics).
	Path string
}

// IsResourceRequest tells resource requests from non-resource ones.
func (a Attributes) IsResourceRequest() bool { return a.Resource != nil }

// Authorizer decides on one request: allow, deny or no opinion, with a
// reason for the user (appended to the Forbidden message) and an error
// when it could not decide.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AuthorizerFunc is a function as an Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Link is a named authorizer of a Chain.
type Link struct {
	Name string
	Authorizer
}

// Chain asks its links in order; the first allow or deny decides, as
// upstream's union authorizer. Errors and reasons of links without an
// opinion are kept and returned with the final no opinion (the reasons
// one a line, as upstream).
type Chain []Link

// Authorize asks the links in order.
func (c Chain) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, l := range c {
		d, reason, err := l.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if d != DecisionNoOpinion {
			return d, reason, errors.Join(errs...)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// Names lists the links in order.
func (c Chain) Names() []string {
	names := make([]string, len(c))
	for i, l := range c {
		names[i] = l.Name
	}
	return names
}

// Data is what the authorizers read, as the API server provides it.
type Data struct {
	Pods   PodReader
	Claims ClaimLister
	// RBAC reads roles and bindings; nil leaves RBAC out of the chain.
	RBAC RBACReader
}

// New builds the API server's chain, in order, as kube-apiserver's:
// the privileged group system:masters, then Node, then RBAC
// (--authorization-mode=Node,RBAC).
func New(d Data) Chain {
	c := Chain{
		{"system:masters", AuthorizerFunc(authorizeMasters)},
		{"Node", &NodeAuthorizer{Pods: d.Pods, Claims: d.Claims}},
	}
	if d.RBAC != nil {
		c = append(c, Link{"RBAC", &RBACAuthorizer{Reader: d.RBAC}})
	}
	return c
}

// RBAC returns the chain's RBAC link, nil without one.
func (c Chain) RBAC() *RBACAuthorizer {
	for _, l := range c {
		if z, ok := l.Authorizer.(*RBACAuthorizer); ok {
			return z
		}
	}
	return nil
}

// Check authorizes a request and turns anything but an allow into the
// error the client gets: upstream's Forbidden, or an internal error when
// an authorizer failed without deciding.
func Check(ctx context.Context, z Authorizer, a Attributes) error {
	d, reason, err := z.Authorize(ctx, a)
	if d == DecisionAllow {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return Forbidden(a, reason)
}

// Forbidden is upstream's refusal of the request, with the authorizer's
// reason if it gave one.
func Forbidden(a Attributes, reason string) error {
	if !a.IsResourceRequest() {
		msg := fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
		return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(withReason(msg, reason)))
	}
	res := a.Resource
	resource := res.Plural
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", a.User.Name, a.Verb, resource, res.GVK.Group)
	// Upstream's forbiddenMessage: "at the cluster scope" for every
	// request without a namespace, cluster-scoped resources included.
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: res.GVK.Group, Resource: res.Plural}, a.Name, errors.New(withReason(msg, reason)))
}

func withReason(msg, reason string) string {
	if reason == "" {
		return msg
	}
	return msg + ": " + reason
}
