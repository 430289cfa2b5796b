package runtime

import (
	"context"
	"fmt"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Streaming is the CRI's streaming set-up: each call returns the URL of
// the runtime's streaming server that serves one exec, attach or
// port-forward session. Its method set matches k8s.io/cri-api's
// RuntimeService.
type Streaming interface {
	Exec(ctx context.Context, req *criv1.ExecRequest) (*criv1.ExecResponse, error)
	Attach(ctx context.Context, req *criv1.AttachRequest) (*criv1.AttachResponse, error)
	PortForward(ctx context.Context, req *criv1.PortForwardRequest) (*criv1.PortForwardResponse, error)
}

var _ Streaming = (*Client)(nil)

// Exec asks for an exec session; the call only prepares it, so the
// client's usual timeout applies.
func (c *Client) Exec(ctx context.Context, req *criv1.ExecRequest) (*criv1.ExecResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", req.GetContainerId(), err)
	}
	return resp, nil
}

// Attach asks for a session attached to the container's main process.
func (c *Client) Attach(ctx context.Context, req *criv1.AttachRequest) (*criv1.AttachResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Attach(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("attach to container %s: %w", req.GetContainerId(), err)
	}
	return resp, nil
}

// PortForward asks for a session forwarding ports of the sandbox.
func (c *Client) PortForward(ctx context.Context, req *criv1.PortForwardRequest) (*criv1.PortForwardResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.PortForward(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod sandbox %s: %w", req.GetPodSandboxId(), err)
	}
	return resp, nil
}

// ReopenContainerLog makes the runtime reopen the container's log file,
// the last step of a log rotation (rename, then reopen).
func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.ReopenContainerLog(ctx, &criv1.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("reopen log of container %s: %w", id, err)
	}
	return nil
}
