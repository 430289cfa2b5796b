package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/controlplane/rbacpolicy"
)

// bootstrapRolesTimeout bounds the rbac/bootstrap-roles hook: upstream's
// (pkg/registry/rbac/rest/storage_rbac.go) polls for 30 s, then fails
// the server, whose authorization would be wrong without the policy.
const bootstrapRolesTimeout = 30 * time.Second

// postStartHook is work the server does once it serves, as upstream's
// post-start hooks: /readyz fails poststarthook/<name> until it finished,
// and a hook that fails stops the server.
type postStartHook struct {
	name    string
	timeout time.Duration
	run     func(ctx context.Context) error
	done    atomic.Bool
}

// check is the hook's /readyz check.
func (h *postStartHook) check() check {
	c := check{name: "poststarthook/" + h.name}
	if !h.done.Load() {
		c.err = errors.New("not finished")
	}
	return c
}

// runHook runs h within its timeout. It returns nil when ctx ended first
// (the server is stopping) and upstream's error when the hook failed.
func runHook(ctx context.Context, h *postStartHook) error {
	hctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	err := h.run(hctx)
	switch {
	case err == nil:
		h.done.Store(true)
		return nil
	case ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("PostStartHook %q failed: %w", h.name, err)
}

// bootstrapRolesHook reconciles the bootstrap RBAC policy as the admin,
// then creates the bindings joining nodes need (joinBindings), which
// kubeadm creates at init, and the cluster DNS's role.
func bootstrapRolesHook(client kubernetes.Interface, log *slog.Logger) *postStartHook {
	return &postStartHook{name: "rbac/bootstrap-roles", timeout: bootstrapRolesTimeout,
		run: func(ctx context.Context) error {
			if err := rbacpolicy.Reconcile(ctx, client, log); err != nil {
				return err
			}
			if err := ensureJoinBindings(ctx, client); err != nil {
				return err
			}
			return ensureClusterDNSRole(ctx, client)
		}}
}
