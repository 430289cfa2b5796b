package imagegc

import (
	"context"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// detect lists the images and containers, updates the records (first
// seen now, last used now when a container refers to it; images gone
// are forgotten) and returns the images as the plan sees them.
func (m *Manager) detect(ctx context.Context, now time.Time) ([]Image, error) {
	list, err := m.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := m.cfg.Containers.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	used := inUse(containers)
	seen := map[string]bool{}
	out := make([]Image, 0, len(list))
	for _, im := range list {
		id := im.GetId()
		seen[id] = true
		r, ok := m.records[id]
		if !ok {
			r = &imageRecord{firstDetected: now}
			m.records[id] = r
		}
		names := imageNames(im)
		busy := used[id] || anyIn(names, used)
		if busy {
			r.lastUsed = now
		}
		out = append(out, Image{
			ID: id, Size: int64(im.GetSize()), InUse: busy,
			Pinned:        im.GetPinned() || m.isSandbox(id, names),
			FirstDetected: r.firstDetected, LastUsed: r.lastUsed,
		})
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	return out, nil
}

// inUse is every image reference of a container: its image ID (ImageRef)
// and the image it was created from.
func inUse(cs []*criv1.Container) map[string]bool {
	used := map[string]bool{}
	for _, c := range cs {
		if ref := c.GetImageRef(); ref != "" {
			used[ref] = true
		}
		if img := c.GetImage().GetImage(); img != "" {
			used[img] = true
		}
	}
	return used
}

func imageNames(im *criv1.Image) []string {
	return append(append([]string{}, im.GetRepoTags()...), im.GetRepoDigests()...)
}

func anyIn(names []string, set map[string]bool) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// isSandbox says whether the image is the runtime's sandbox image, named
// by ID, tag or digest.
func (m *Manager) isSandbox(id string, names []string) bool {
	s := m.cfg.SandboxImage
	return s != "" && (id == s || anyIn(names, map[string]bool{s: true}))
}
