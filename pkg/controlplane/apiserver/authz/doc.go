// Package authz decides whether a user may make a request: an ordered
// chain of Authorizers, each answering allow, deny or no opinion, the
// first decisive answer winning (upstream's union authorizer). New builds
// today's chain: system:masters, the review APIs every user may call
// (system:basic-user), /metrics for system:monitoring, and the node
// authorizer with the system:node rules. Whatever no link allows is
// refused with upstream's Forbidden message.
//
// The API server core calls Check for every resource and non-resource
// request, and Review for SelfSubjectAccessReviews and
// SubjectAccessReviews, so that reviews and requests get the same
// answers. The node authorizer reads pods and claims through the small
// interfaces declared here, which the core's storage adapters satisfy.
//
// RBAC plugs in as one more link, after the node authorizer (upstream's
// --authorization-mode=Node,RBAC), in New.
package authz
