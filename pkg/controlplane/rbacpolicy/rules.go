package rbacpolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's verb sets (bootstrappolicy/policy.go).
var (
	write      = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite  = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read       = []string{"get", "list", "watch"}
	readUpdate = []string{"get", "list", "watch", "update", "patch"}
)

// The API groups the rules name.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	extensionsGroup     = "extensions"
	policyGroup         = "policy"
	rbacGroup           = "rbac.authorization.k8s.io"
	storageGroup        = "storage.k8s.io"
	resMetricsGroup     = "metrics.k8s.io"
	customMetricsGroup  = "custom.metrics.k8s.io"
	externalMetrics     = "external.metrics.k8s.io"
	networkingGroup     = "networking.k8s.io"
	eventsGroup         = "events.k8s.io"
	nodeGroup           = "node.k8s.io"
	resourceGroup       = "resource.k8s.io"
	admissionGroup      = "admissionregistration.k8s.io"
)

// Metadata every bootstrap object carries.
const (
	// BootstrappingLabel marks the objects of the default policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is its value.
	BootstrappingValue = "rbac-defaults"
	// AutoUpdateAnnotation is rbacv1.AutoUpdateAnnotationKey: "false" on
	// an object keeps Reconcile's hands off it.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey
)

// The labels that aggregate roles into admin, edit and view.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// ruleBuilder writes a PolicyRule; as upstream's rule helper, every list
// of the finished rule is sorted (the role's rule order stays).
type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: verbs}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) *ruleBuilder      { b.r.NonResourceURLs = u; return b }

func (b *ruleBuilder) rule() rbacv1.PolicyRule {
	sorted := func(s []string) []string {
		if s == nil {
			return nil
		}
		s = slices.Clone(s)
		slices.Sort(s)
		return s
	}
	return rbacv1.PolicyRule{
		Verbs:           sorted(b.r.Verbs),
		APIGroups:       sorted(b.r.APIGroups),
		Resources:       sorted(b.r.Resources),
		ResourceNames:   sorted(b.r.ResourceNames),
		NonResourceURLs: sorted(b.r.NonResourceURLs),
	}
}

// rules finishes builders in order.
func rules(bs ...*ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(bs))
	for i, b := range bs {
		out[i] = b.rule()
	}
	return out
}

// eventsRule is what every component that records events may do.
func eventsRule() *ruleBuilder {
	return newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events")
}

// defaultMeta is the metadata of a bootstrap object: its name, extra
// labels (aggregation), and the bootstrapping label and auto-update
// annotation.
func defaultMeta(name string, labels ...string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

// aggregation selects the roles labelled key=true.
func aggregation(key string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{key: "true"}}}}
}

// Subjects.
func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterBinding binds the ClusterRole of the same name.
func clusterBinding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: defaultMeta(role),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}
