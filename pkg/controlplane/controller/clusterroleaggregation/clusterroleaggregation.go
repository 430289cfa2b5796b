package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

const (
	// FieldManager owns the aggregated rules.
	FieldManager = "clusterrole-aggregation-controller"
	// Workers is kube-controller-manager's worker count for it.
	Workers = 5
	// writeTimeout bounds one write of a role.
	writeTimeout = 30 * time.Second
)

// Controller keeps the rules of aggregated ClusterRoles.
type Controller struct {
	client kubernetes.Interface
	roles  rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string] // role names
	log    *slog.Logger
}

// New registers the controller's informer with factory; start the factory
// after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	inf := factory.Rbac().V1().ClusterRoles()
	c := &Controller{
		client: client,
		roles:  inf.Lister(),
		synced: inf.Informer().HasSynced,
		queue:  ctrlutil.NewQueue[string]("ClusterRoleAggregator"),
		log:    log,
	}
	_, _ = inf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(_, _ any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	}))
	return c
}

// Run syncs aggregated roles with the given number of workers until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting clusterrole aggregation controller")
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced)
}

// enqueueAggregated queues every role with an aggregation rule: the set
// of roles is small, and the change that came in may feed any of them.
func (c *Controller) enqueueAggregated() {
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		c.log.Error("list cluster roles", "err", err)
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// sync writes the aggregated rules of role name when they changed.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get cluster role %s: %w", name, err)
	case role.AggregationRule == nil:
		return nil
	}
	rules, err := Aggregate(role, c.roles.List)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	return c.write(ctx, role, rules)
}

// Aggregate is the union of the rules of the roles role's selectors
// match, taken per selector in name order, each rule once; list lists the
// roles a selector matches.
func Aggregate(role *rbacv1.ClusterRole, list func(labels.Selector) ([]*rbacv1.ClusterRole, error)) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("cluster role %s: selector %d: %w", role.Name, i, err)
		}
		matched, err := list(sel)
		if err != nil {
			return nil, fmt.Errorf("list cluster roles for %s: %w", role.Name, err)
		}
		matched = slices.Clone(matched) // the lister's slice may be shared
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

// write applies the rules; a server without server-side apply gets an
// update of the role read from the cache instead (upstream's fallback).
func (c *Controller) write(ctx context.Context, role *rbacv1.ClusterRole, rules []rbacv1.PolicyRule) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	apply := rbacv1ac.ClusterRole(role.Name).WithRules(applyRules(rules)...)
	_, err := c.client.RbacV1().ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsUnsupportedMediaType(err) {
		updated := role.DeepCopy() // the cache's copy is shared
		updated.Rules = rules
		_, err = c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write aggregated rules of cluster role %s: %w", role.Name, err)
	}
	c.log.Debug("aggregated cluster role", "clusterRole", role.Name, "rules", len(rules))
	return nil
}

func applyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, r := range rules {
		a := rbacv1ac.PolicyRule()
		a.Verbs, a.APIGroups, a.Resources = r.Verbs, r.APIGroups, r.Resources
		a.ResourceNames, a.NonResourceURLs = r.ResourceNames, r.NonResourceURLs
		out = append(out, a)
	}
	return out
}
