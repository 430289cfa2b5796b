package rbacpolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// retryInterval is how often a pass is tried again (upstream's hook
// polls every second).
const retryInterval = time.Second

// Reconcile brings the default policy into the cluster, as upstream's
// rbac/bootstrap-roles hook: passes are tried every second until one
// reconciles every object, or ctx ends (its error then says what failed
// last).
func Reconcile(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	return reconcileEvery(ctx, client, log, retryInterval)
}

func reconcileEvery(ctx context.Context, client kubernetes.Interface, log *slog.Logger, interval time.Duration) error {
	if log == nil {
		log = slog.Default()
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		// a fresh policy each pass: creates hand the objects to the client
		last = reconcilePass(ctx, client, Default(), log)
		if last != nil {
			log.Warn("bootstrap RBAC policy not reconciled yet; retrying", "err", last)
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("unable to initialize roles: %w", errors.Join(err, last))
	}
	return nil
}

// reconcilePass is one attempt at every object. As upstream, a failure
// does not stop the pass: as many objects as possible are reconciled.
func reconcilePass(ctx context.Context, client kubernetes.Interface, p Policy, log *slog.Logger) error {
	// only reconcile once the role storage answers
	if err := listable(ctx, client); err != nil {
		return err
	}
	var errs []error
	for _, s := range steps(ctx, client, p) {
		err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
			o, err := s.run()
			if err == nil {
				o.log(log, s.what)
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("unable to reconcile %s: %w", s.what, err))
		}
	}
	return errors.Join(errs...)
}

// listable fails while cluster roles or bindings cannot be listed.
func listable(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("unable to initialize clusterroles: %w", err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("unable to initialize clusterrolebindings: %w", err)
	}
	return nil
}

// retriable: a write lost to a concurrent one, or a server that is busy
// (upstream retries both).
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
}

// step reconciles one object; what names it as upstream's logs do.
type step struct {
	what string
	run  func() (outcome, error)
}

// outcome is what a step did.
type outcome struct {
	op        reconciliation.ReconcileOperation
	protected bool
	// missing are the rules or subjects the object lacked.
	missing any
	// kind is "permissions" or "subjects".
	kind string
}

// log reports the outcome in upstream's words.
func (o outcome) log(log *slog.Logger, what string) {
	switch {
	case o.protected && o.op != reconciliation.ReconcileNone:
		log.Warn(fmt.Sprintf("skipped reconcile-protected %s with missing %s: %v", what, o.kind, o.missing))
	case o.op == reconciliation.ReconcileUpdate:
		log.Info(fmt.Sprintf("updated %s with additional %s: %v", what, o.kind, o.missing))
	case o.op == reconciliation.ReconcileCreate:
		log.Info("created " + what)
	case o.op == reconciliation.ReconcileRecreate:
		log.Info("recreated " + what)
	}
}

// steps are the policy's objects in upstream's order: cluster roles,
// cluster role bindings, roles, role bindings. The union is kept:
// nothing a user added is removed.
func steps(ctx context.Context, client kubernetes.Interface, p Policy) []step {
	var out []step
	for i := range p.ClusterRoles {
		r := &p.ClusterRoles[i]
		out = append(out, roleStep("clusterrole."+rbacGroup+"/"+r.Name,
			reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, clusterRoleModifier(ctx, client)))
	}
	for i := range p.ClusterRoleBindings {
		b := &p.ClusterRoleBindings[i]
		out = append(out, bindingStep("clusterrolebinding."+rbacGroup+"/"+b.Name,
			reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, clusterRoleBindingModifier(ctx, client)))
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		out = append(out, roleStep("role."+rbacGroup+"/"+r.Name+" in "+r.Namespace,
			reconciliation.RoleRuleOwner{Role: r}, roleModifier(ctx, client)))
	}
	for i := range p.RoleBindings {
		b := &p.RoleBindings[i]
		out = append(out, bindingStep("rolebinding."+rbacGroup+"/"+b.Name+" in "+b.Namespace,
			reconciliation.RoleBindingAdapter{RoleBinding: b}, roleBindingModifier(ctx, client)))
	}
	return out
}

func roleStep(what string, r reconciliation.RuleOwner, m reconciliation.RuleOwnerModifier) step {
	return step{what: what, run: func() (outcome, error) {
		opts := reconciliation.ReconcileRoleOptions{Role: r, Client: m, Confirm: true}
		res, err := opts.Run()
		if err != nil {
			return outcome{}, err
		}
		return outcome{op: res.Operation, protected: res.Protected, missing: res.MissingRules, kind: "permissions"}, nil
	}}
}

func bindingStep(what string, b reconciliation.RoleBinding, m reconciliation.RoleBindingModifier) step {
	return step{what: what, run: func() (outcome, error) {
		opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: b, Client: m, Confirm: true}
		res, err := opts.Run()
		if err != nil {
			return outcome{}, err
		}
		return outcome{op: res.Operation, protected: res.Protected, missing: res.MissingSubjects, kind: "subjects"}, nil
	}}
}
