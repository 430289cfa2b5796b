package volume

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const pvcPluginName = "kubernetes.io/pvc"

// pvcPlugin mounts the persistent volume a claim is bound to, for the PV
// types that live on the node itself: hostPath and local. Generic
// ephemeral volumes are claims too (named <pod>-<volume>).
type pvcPlugin struct {
	getter Getter
}

func (p *pvcPlugin) Name() string { return pvcPluginName }

func (p *pvcPlugin) CanSupport(v *v1.Volume) bool {
	return v.PersistentVolumeClaim != nil || v.Ephemeral != nil
}

// SetUp resolves claim → bound volume and returns the volume's path.
func (p *pvcPlugin) SetUp(ctx context.Context, c SetUpContext) (string, error) {
	if p.getter == nil {
		return "", noClientError("persistentVolumeClaim", c.Volume.Name)
	}
	pvc, err := p.claim(ctx, c.Pod, c.Volume)
	if err != nil {
		return "", err
	}
	pv, err := p.boundVolume(ctx, pvc)
	if err != nil {
		return "", err
	}
	return setUpPersistentVolume(pv, c.Pod, ClaimReadOnly(c.Volume))
}

// TearDown does nothing: the data stays on the node for the next pod.
func (p *pvcPlugin) TearDown(string) error { return nil }

// ClaimReadOnly tells whether the pod mounts its claim read-only; the
// Plugin interface returns only a path, so the caller asks this.
func ClaimReadOnly(v *v1.Volume) bool {
	return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
}

// claim fetches the pod's claim and checks it may be used: bound, not
// being deleted, and for an ephemeral volume, owned by the pod.
func (p *pvcPlugin) claim(ctx context.Context, pod *v1.Pod, v *v1.Volume) (*v1.PersistentVolumeClaim, error) {
	name := claimName(pod, v)
	pvc, err := p.getter.GetPersistentVolumeClaim(ctx, pod.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PVC %s/%s from API server: %w", pod.Namespace, name, err)
	}
	if pvc.DeletionTimestamp != nil {
		return nil, fmt.Errorf("can't start pod because PVC %s/%s is being deleted", pod.Namespace, name)
	}
	if v.Ephemeral != nil && !metav1.IsControlledBy(pvc, pod) {
		return nil, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pod.Namespace, name, pod.Namespace, pod.Name)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, fmt.Errorf("PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)",
			pod.Namespace, name, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	return pvc, nil
}

func claimName(pod *v1.Pod, v *v1.Volume) string {
	if v.Ephemeral != nil {
		return pod.Name + "-" + v.Name
	}
	return v.PersistentVolumeClaim.ClaimName
}

// boundVolume fetches the claim's volume and checks it points back at
// the claim.
func (p *pvcPlugin) boundVolume(ctx context.Context, pvc *v1.PersistentVolumeClaim) (*v1.PersistentVolume, error) {
	name := pvc.Spec.VolumeName
	pv, err := p.getter.GetPersistentVolume(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PV %q from API server: %w", name, err)
	}
	if pv.Spec.ClaimRef == nil {
		return nil, fmt.Errorf("found PV object %q but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	}
	if pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, fmt.Errorf("found PV object %q but its pv.Spec.ClaimRef.UID (%q) does not point to claim.UID (%q)",
			name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return pv, nil
}

// setUpPersistentVolume checks the volume's node path and returns it.
func setUpPersistentVolume(pv *v1.PersistentVolume, pod *v1.Pod, readOnly bool) (string, error) {
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return "", fmt.Errorf("PV %q: block volume mode is not supported by this node agent", pv.Name)
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath.Path, pv.Spec.HostPath.Type); err != nil {
			return "", err
		}
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return setUpLocal(pv, pod, readOnly)
	}
	return "", fmt.Errorf("PV %q: volume type %s is not supported by this node agent (only hostPath and local)", pv.Name, pvSourceType(pv))
}

// setUpLocal accepts a local volume that is a directory, and gives it to
// the pod's fsGroup unless mounted read-only (with the pod's change
// policy: local volumes are where OnRootMismatch saves a long walk).
func setUpLocal(pv *v1.PersistentVolume, pod *v1.Pod, readOnly bool) (string, error) {
	path := pv.Spec.Local.Path
	if path == "" {
		return "", errors.New("local volume source is nil or local path is not set")
	}
	t, err := fileType(path)
	if err != nil {
		return "", err
	}
	switch t {
	case v1.HostPathDirectory:
	case v1.HostPathBlockDev:
		return "", fmt.Errorf("PV %q: local block devices are not supported by this node agent", pv.Name)
	default:
		return "", errors.New("only directory and block device are supported")
	}
	if !readOnly {
		fsGroup, policy := podFSGroup(pod)
		if err := (ownership{fsGroup: fsGroup, policy: policy}).apply(path); err != nil {
			return "", fmt.Errorf("set fsGroup ownership of %s: %w", path, err)
		}
	}
	return path, nil
}

// pvSourceType names the volume's source for the error message.
func pvSourceType(pv *v1.PersistentVolume) string {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		return "csi (driver " + s.CSI.Driver + ")"
	case s.NFS != nil:
		return "nfs"
	case s.ISCSI != nil:
		return "iscsi"
	case s.FC != nil:
		return "fc"
	}
	return "unknown"
}
