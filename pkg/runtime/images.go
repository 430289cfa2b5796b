package runtime

import (
	"context"
	"fmt"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageStore is what image garbage collection and the node status need of
// the CRI image service; its method set matches k8s.io/cri-api's so that
// the cri-api testing fakes satisfy it.
type ImageStore interface {
	ListImages(ctx context.Context, filter *criv1.ImageFilter) ([]*criv1.Image, error)
	RemoveImage(ctx context.Context, image *criv1.ImageSpec) error
}

var _ ImageStore = (*Client)(nil)

func (c *Client) ListImages(ctx context.Context, filter *criv1.ImageFilter) ([]*criv1.Image, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.img.ListImages(ctx, &criv1.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	return resp.Images, nil
}

func (c *Client) RemoveImage(ctx context.Context, image *criv1.ImageSpec) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.img.RemoveImage(ctx, &criv1.RemoveImageRequest{Image: image}); err != nil {
		return fmt.Errorf("remove image %s: %w", image.GetImage(), err)
	}
	return nil
}
