package eviction

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// localStorageVictims is the kubelet's localStorageEviction: every pod
// over an emptyDir sizeLimit, its summed ephemeral-storage limit or a
// container's, checked in that order, evicted at once with a 1s grace.
// Critical pods are never evicted.
func localStorageVictims(pods []Pod, d Disks) []Victim {
	var out []Victim
	for i := range pods {
		p := &pods[i]
		if p.Stats == nil || p.Critical {
			continue
		}
		if msg, signal, ok := overLocalLimit(p, d); ok {
			out = append(out, Victim{
				UID: p.UID, Namespace: p.Namespace, Name: p.Name,
				GracePeriodSeconds: immediateGraceSecs, Message: msg, Signal: signal,
			})
		}
	}
	return out
}

func overLocalLimit(p *Pod, d Disks) (string, string, bool) {
	used := map[string]*uint64{}
	for _, v := range p.Stats.Volumes {
		used[v.Name] = v.UsedBytes
	}
	for _, e := range p.EmptyDirs {
		if u := used[e.Name]; u != nil {
			if q := bytesQ(u); q.Cmp(e.SizeLimit) > 0 {
				return fmt.Sprintf(emptyDirMessageFmt, e.Name, e.SizeLimit.String()), SignalEmptyDirFsLimit, true
			}
		}
	}
	if lim := p.EphemeralStorageLimit; lim != nil {
		if q := bytesQ(p.Stats.EphemeralStorageUsed); q.Cmp(*lim) > 0 {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, lim.String()), SignalEphemeralPodFsLimit, true
		}
	}
	for _, cs := range p.Stats.Containers {
		c, ok := findContainer(p.Containers, cs.Name)
		if !ok || c.Init || c.EphemeralStorageLimit == nil {
			continue
		}
		if use := containerDiskUse(cs, d); c.EphemeralStorageLimit.Cmp(use) < 0 {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, c.EphemeralStorageLimit.String()), SignalEphemeralContainerFsLimit, true
		}
	}
	return "", "", false
}

// containerDiskUse: logs, and the writable layer when it is on the node's
// filesystem.
func containerDiskUse(cs ContainerStats, d Disks) resource.Quantity {
	q := resource.Quantity{Format: resource.BinarySI}
	for _, u := range []*FsUsage{cs.Logs, rootfsUnless(cs, d.DedicatedImageFs)} {
		if u != nil && u.UsedBytes != nil {
			q.Add(*resource.NewQuantity(int64(*u.UsedBytes), resource.BinarySI))
		}
	}
	return q
}

func rootfsUnless(cs ContainerStats, dedicated bool) *FsUsage {
	if dedicated {
		return nil
	}
	return cs.Rootfs
}
