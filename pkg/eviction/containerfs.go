package eviction

import "errors"

// Disks is how the runtime's filesystems sit on the node: an image
// filesystem apart from the node's (DedicatedImageFs), and the writable
// layers apart from the images (SplitContainerImageFs, KEP-4191).
type Disks struct {
	DedicatedImageFs      bool
	SplitContainerImageFs bool
}

// WithContainerFs is the kubelet's UpdateContainerFsThresholds: the
// containerfs signals are never the user's to set; they follow nodefs
// (one filesystem, or writable layers split from the images) or imagefs
// (images and writable layers together on their own filesystem). A user's
// containerfs threshold is replaced, with the kubelet's error saying so.
func WithContainerFs(ts []Threshold, d Disks) ([]Threshold, error) {
	var errs []error
	out := make([]Threshold, 0, len(ts)+4)
	for _, t := range ts {
		if t.Signal == SignalContainerFsAvailable || t.Signal == SignalContainerFsInodesFree {
			kind := "soft"
			if t.Hard() {
				kind = "hard"
			}
			errs = append(errs, errors.New("found "+string(t.Signal)+" for "+kind+" eviction. ignoring"))
			continue
		}
		out = append(out, t)
	}
	space, inodes := SignalNodeFsAvailable, SignalNodeFsInodesFree
	if d.DedicatedImageFs && !d.SplitContainerImageFs {
		space, inodes = SignalImageFsAvailable, SignalImageFsInodesFree
	}
	for _, t := range ts {
		switch t.Signal {
		case space:
			t.Signal = SignalContainerFsAvailable
			out = append(out, t)
		case inodes:
			t.Signal = SignalContainerFsInodesFree
			out = append(out, t)
		}
	}
	return out, errors.Join(errs...)
}
