package apiclient

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxNamesPerImage is the kubelet's MaxNamesPerImageInNodeStatus
// (pkg/kubelet/nodestatus).
const maxNamesPerImage = 5

// ImageLister lists the runtime's images (the CRI image service).
type ImageLister interface {
	ListImages(ctx context.Context, filter *criv1.ImageFilter) ([]*criv1.Image, error)
}

// setImages is the kubelet's Images setter: the largest images first, at
// most MaxImages, each named by its digests then its tags (at most 5). A
// failed list empties the field, as upstream's does.
func (n *NodeStatus) setImages(ctx context.Context, st *v1.NodeStatus) {
	if n.cfg.Images == nil {
		return
	}
	list, err := n.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		n.log.Warn("error getting image list", "err", err)
		st.Images = nil
		return
	}
	st.Images = NodeImages(list, n.cfg.MaxImages)
}

// NodeImages is status.images for the runtime's images.
func NodeImages(list []*criv1.Image, maxImages int32) []v1.ContainerImage {
	list = append([]*criv1.Image(nil), list...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].GetSize() > list[j].GetSize() })
	if maxImages > -1 && int(maxImages) < len(list) {
		list = list[:maxImages]
	}
	var out []v1.ContainerImage
	for _, im := range list {
		names := append(append([]string{}, im.GetRepoDigests()...), im.GetRepoTags()...)
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(im.GetSize())})
	}
	return out
}
