package volume

import (
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// defaultFileMode is the API's default for defaultMode.
const defaultFileMode int32 = 0o644

// dataDirPerm is the mode of a data volume's directory before anything is
// mounted on it (the kubelet wraps an emptyDir).
const dataDirPerm = os.FileMode(0o777)

// dataVolume is the part every API-data volume (configMap, secret,
// downwardAPI, projected) shares: a directory, on a tmpfs for secrets,
// filled by the atomic writer.
type dataVolume struct {
	mounter     Mounter
	allocatable v1.ResourceList
	// memory puts the volume on a tmpfs so that its data never reaches
	// the node's disk.
	memory bool
}

// write makes c.Dir hold exactly payload. The payload is built before
// this is called, so that a missing object creates nothing; a volume
// this call created is removed again if the write fails (one that
// containers may already use is left as it was).
func (d dataVolume) write(c SetUpContext, payload map[string]FileProjection) (retErr error) {
	fresh, err := d.prepare(c)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil && fresh {
			_ = tearDownDir(d.mounter, c.Dir)
		}
	}()
	if err := makeNestedMountpoints(c.Volume.Name, c.Dir, c.Pod); err != nil {
		return err
	}
	w, err := NewAtomicWriter(c.Dir)
	if err != nil {
		return err
	}
	fsGroup, _ := podFSGroup(c.Pod)
	// The whole volume, not only the new timestamped directory: the first
	// write also creates the links and directories around it. The change
	// policy does not apply to data volumes.
	setPerms := func(string) error {
		return ownership{fsGroup: fsGroup, readOnly: true}.apply(c.Dir)
	}
	return w.Write(payload, setPerms)
}

// prepare creates the directory (and its tmpfs) unless it is there; it
// reports whether it was created now.
func (d dataVolume) prepare(c SetUpContext) (bool, error) {
	_, err := os.Lstat(c.Dir)
	fresh := errors.Is(err, os.ErrNotExist)
	if err != nil && !fresh {
		return false, fmt.Errorf("stat volume directory: %w", err)
	}
	if fresh {
		if err := setupDir(c.Dir, dataDirPerm); err != nil {
			return false, err
		}
	}
	if !d.memory {
		return fresh, nil
	}
	size := memoryVolumeSize(c.Pod, nil, d.allocatable)
	if err := mountTmpfs(d.mounter, c.Dir, size); err != nil {
		if fresh {
			_ = os.Remove(c.Dir)
		}
		return false, err
	}
	return fresh, nil
}

// tearDown unmounts the tmpfs, if any, and removes the directory.
func (d dataVolume) tearDown(dir string) error { return tearDownDir(d.mounter, dir) }

// fileMode is mode, else the API default.
func fileMode(mode *int32) int32 {
	if mode == nil {
		return defaultFileMode
	}
	return *mode
}

// isOptional reads an optional flag.
func isOptional(b *bool) bool { return b != nil && *b }

// objectError returns the kubelet's message for a missing object
// (`configmap "x" not found`: its object managers name the resource in
// the singular), other errors unchanged.
func objectError(err error, resource, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	return err
}

// noClientError is for a standalone agent asked for API data.
func noClientError(kind, volName string) error {
	return fmt.Errorf("cannot setup %s volume %v because kube client is not configured", kind, volName)
}
