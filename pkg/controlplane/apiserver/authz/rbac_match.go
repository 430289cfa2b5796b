package authz

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Rule matching as upstream's pkg/apis/rbac/v1/evaluation_helpers.go and
// RuleAllows of plugin/pkg/auth/authorizer/rbac/rbac.go. "res/*" is no
// wildcard upstream: it matches only a subresource literally named "*".

// RuleAllows reports whether rule grants the request.
func RuleAllows(a Attributes, rule *rbacv1.PolicyRule) bool {
	if !a.IsResourceRequest() {
		return VerbMatches(rule, a.Verb) && NonResourceURLMatches(rule, a.Path)
	}
	combined := a.Resource.Plural
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	return VerbMatches(rule, a.Verb) &&
		APIGroupMatches(rule, a.Resource.GVK.Group) &&
		ResourceMatches(rule, combined, a.Subresource) &&
		ResourceNameMatches(rule, a.Name)
}

// VerbMatches: "*" or the verb.
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches: "*" or the group.
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches: "*", the resource with its subresource
// ("pods/log"), or "*/<subresource>" for that subresource of any resource.
func ResourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

// ResourceNameMatches: no names means every name.
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// NonResourceURLMatches: "*", the path, or a prefix ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
