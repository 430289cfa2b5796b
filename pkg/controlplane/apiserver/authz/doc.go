// Package authz decides whether a user may make a request: an ordered
// chain of Authorizers, each answering allow, deny or no opinion, the
// first decisive answer winning (upstream's union authorizer). New builds
// the chain as kube-apiserver's: the privileged group system:masters, the
// node authorizer with the system:node rules, then RBAC (upstream's
// --authorization-mode=Node,RBAC): roles and bindings read from the API
// server's watch cache through RBACReader. What upstream's default roles
// grant everyone else (system:basic-user's self reviews,
// system:monitoring's /metrics, the components' TokenReviews and
// SubjectAccessReviews) is RBAC's, from the bootstrap policy the server
// reconciles on start (package rbacpolicy). Whatever no
// link allows is refused with upstream's Forbidden message, with the
// reasons of the links that had none (RBAC's unreadable roles).
//
// The API server core calls Check for every resource and non-resource
// request, and Review for SelfSubjectAccessReviews and
// SubjectAccessReviews, so that reviews and requests get the same
// answers; Chain.RulesFor answers SelfSubjectRulesReviews. The node and
// RBAC authorizers read through the small interfaces declared here,
// which the core's storage adapters satisfy.
//
// Escalation is RBAC's escalation prevention, which the core runs on
// every write after validation: roles only with rights the writer holds
// (or escalate), bindings only to roles whose rights it holds (or bind).
package authz
