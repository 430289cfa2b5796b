package runtime

import (
	"context"
	"fmt"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stats is the subset of the CRI the stats provider uses; its method set
// matches k8s.io/cri-api's so that the cri-api testing fakes satisfy it.
type Stats interface {
	ListPodSandbox(ctx context.Context, filter *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error)
	ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error)
	ListContainerStats(ctx context.Context, filter *criv1.ContainerStatsFilter) ([]*criv1.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context, filter *criv1.PodSandboxStatsFilter) ([]*criv1.PodSandboxStats, error)
}

// ImageFs reports the runtime's image filesystem usage.
type ImageFs interface {
	ImageFsInfo(ctx context.Context) (*criv1.ImageFsInfoResponse, error)
}

var (
	_ Stats   = (*Client)(nil)
	_ ImageFs = (*Client)(nil)
)

func (c *Client) ListContainerStats(ctx context.Context, filter *criv1.ContainerStatsFilter) ([]*criv1.ContainerStats, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.ListContainerStats(ctx, &criv1.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list container stats: %w", err)
	}
	return resp.Stats, nil
}

// ListPodSandboxStats fails with codes.Unimplemented on runtimes without
// sandbox stats (containerd before 1.7): callers sum the containers then.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *criv1.PodSandboxStatsFilter) ([]*criv1.PodSandboxStats, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandboxStats(ctx, &criv1.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandbox stats: %w", err)
	}
	return resp.Stats, nil
}

func (c *Client) ImageFsInfo(ctx context.Context) (*criv1.ImageFsInfoResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.img.ImageFsInfo(ctx, &criv1.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("image filesystem info: %w", err)
	}
	return resp, nil
}
