package apiserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/authz"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/rbacpolicy"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// bootstrapPolicy reconciles upstream's bootstrap RBAC policy, as the
// server's rbac/bootstrap-roles hook does, and waits until the
// authorizer grants what its bindings give (RBAC reads through the watch
// cache): the tests' users get upstream's default rights.
func bootstrapPolicy(ctx context.Context, s *Server, rc *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = -1, 0 // unthrottled: a few hundred requests
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := rbacpolicy.Reconcile(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return err
	}
	return waitForPolicy(ctx, s)
}

// waitForPolicy waits until s's authorizer grants what the bootstrap
// bindings give.
func waitForPolicy(ctx context.Context, s *Server) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tokenReviews := &registry.Resource{GVK: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1"}, Plural: "tokenreviews"}
	granted := []authz.Attributes{
		{User: request.User{Name: "prometheus", Groups: []string{authz.MonitoringGroup}}, Verb: "get", Path: "/metrics"},
		{User: request.User{Name: "system:kube-controller-manager"}, Verb: "create", Resource: tokenReviews},
		{User: request.User{Name: "system:kube-scheduler"}, Verb: "create", Resource: tokenReviews},
	}
	for _, a := range granted {
		for authz.Check(ctx, s.authorizers, a) != nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("bootstrap policy: %s may not %s: %w", a.User.Name, a.Verb, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
