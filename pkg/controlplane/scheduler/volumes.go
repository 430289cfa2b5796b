package scheduler

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Upstream's VolumeBinding and VolumeRestrictions reasons.
const (
	reasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	reasonVolumeNodeConfl  = "node(s) had volume node affinity conflict"
	reasonVolumeBindConfl  = "node(s) didn't find available persistent volumes to bind"
	reasonPVNotExist       = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	reasonRWOPConflict     = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

// volumeLookup is what the volume checks read: the informers' caches.
type volumeLookup struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

// podVolumes is what the volume checks found out about a pod's claims
// before looking at nodes (upstream's VolumeBinding PreFilter state).
type podVolumes struct {
	bound        []*v1.PersistentVolumeClaim     // fully bound claims
	boundVolumes map[string]*v1.PersistentVolume // by name; nil: the volume is gone
	delayed      []*v1.PersistentVolumeClaim     // WaitForFirstConsumer claims to bind on the chosen node
	candidates   []*v1.PersistentVolume          // every volume, for the delayed claims
	rwopConflict bool                            // a ReadWriteOncePod claim is in use by another pod
}

// podClaims lists the claims a pod uses, with whether each is a generic
// ephemeral volume's.
func podClaims(pod *v1.Pod) (names []string, isEphemeral []bool) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil:
			names, isEphemeral = append(names, vol.PersistentVolumeClaim.ClaimName), append(isEphemeral, false)
		case vol.Ephemeral != nil:
			names, isEphemeral = append(names, ephemeral.VolumeClaimName(pod, vol)), append(isEphemeral, true)
		}
	}
	return names, isEphemeral
}

// preFilterVolumes is upstream's VolumeBinding PreFilter: every claim
// must exist, not be lost or deleted, and be bound unless its class waits
// for the first consumer. A non-empty message makes the pod unschedulable
// on every node; an error is a failed lookup, retried with backoff.
func (l *volumeLookup) preFilterVolumes(pod *v1.Pod, nodes []*nodeInfo) (*podVolumes, string, error) {
	names, isEphemeral := podClaims(pod)
	if len(names) == 0 {
		return nil, "", nil
	}
	pv := &podVolumes{boundVolumes: map[string]*v1.PersistentVolume{}}
	unboundImmediate := false
	for i, name := range names {
		claim, msg, err := l.usableClaim(pod, name, isEphemeral[i])
		if msg != "" || err != nil {
			return nil, msg, err
		}
		if err := l.classify(pv, claim, &unboundImmediate); err != nil {
			return nil, "", err
		}
	}
	if unboundImmediate {
		return nil, reasonUnboundImmediate, nil
	}
	if len(pv.delayed) > 0 {
		var err error
		if pv.candidates, err = l.volumes.List(labels.Everything()); err != nil {
			return nil, "", err
		}
	}
	pv.rwopConflict = rwopInUse(pod, l.rwopClaims(pod.Namespace, names), nodes)
	return pv, "", nil
}

// usableClaim fetches one claim, or says why the pod cannot use it.
func (l *volumeLookup) usableClaim(pod *v1.Pod, name string, isEphemeral bool) (*v1.PersistentVolumeClaim, string, error) {
	claim, err := l.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err) && isEphemeral:
		return nil, fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name), nil
	case apierrors.IsNotFound(err):
		return nil, err.Error(), nil // persistentvolumeclaim "x" not found
	case err != nil:
		return nil, "", err
	case claim.Status.Phase == v1.ClaimLost:
		return nil, fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", claim.Name, claim.Spec.VolumeName), nil
	case claim.DeletionTimestamp != nil:
		return nil, fmt.Sprintf("persistentvolumeclaim %q is being deleted", claim.Name), nil
	}
	if isEphemeral {
		if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
			return nil, err.Error(), nil
		}
	}
	return claim, "", nil
}

// classify files a claim as bound (with its volume), delayed, or unbound
// immediate (also a claim that names a volume the binder has not bound).
func (l *volumeLookup) classify(pv *podVolumes, claim *v1.PersistentVolumeClaim, unboundImmediate *bool) error {
	if claim.Spec.VolumeName != "" && metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
		pv.bound = append(pv.bound, claim)
		vol, err := l.volumes.Get(claim.Spec.VolumeName)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		pv.boundVolumes[claim.Spec.VolumeName] = vol
		return nil
	}
	delay, err := storagehelpers.IsDelayBindingMode(claim, l.classes)
	if err != nil {
		return err
	}
	if delay && claim.Spec.VolumeName == "" {
		pv.delayed = append(pv.delayed, claim)
	} else {
		*unboundImmediate = true
	}
	return nil
}

// rwopClaims are those of names that ask for ReadWriteOncePod.
func (l *volumeLookup) rwopClaims(ns string, names []string) []string {
	var out []string
	for _, name := range names {
		claim, err := l.claims.PersistentVolumeClaims(ns).Get(name)
		if err == nil && slices.Contains(claim.Spec.AccessModes, v1.ReadWriteOncePod) {
			out = append(out, name)
		}
	}
	return out
}

// rwopInUse reports whether another placed pod uses one of the claims.
func rwopInUse(pod *v1.Pod, claims []string, nodes []*nodeInfo) bool {
	if len(claims) == 0 {
		return false
	}
	for _, ni := range nodes {
		for _, p := range ni.Pods {
			if p.UID == pod.UID || p.Namespace != pod.Namespace {
				continue
			}
			names, _ := podClaims(p)
			for _, n := range names {
				if slices.Contains(claims, n) {
					return true
				}
			}
		}
	}
	return false
}

// volumeRestrictions is the VolumeRestrictions filter: a ReadWriteOncePod
// claim already in use blocks every node.
func (pv *podVolumes) volumeRestrictions(_ *v1.Pod, _ *nodeInfo, _ []*nodeInfo) []string {
	if pv.rwopConflict {
		return []string{reasonRWOPConflict}
	}
	return nil
}

// volumeBinding is the VolumeBinding filter: bound volumes' node affinity
// must admit the node, and each delayed claim needs a volume available
// there.
func (pv *podVolumes) volumeBinding(_ *v1.Pod, ni *nodeInfo, _ []*nodeInfo) []string {
	var reasons []string
	nodeConflict, missing := false, false
	for _, claim := range pv.bound {
		vol := pv.boundVolumes[claim.Spec.VolumeName]
		switch {
		case vol == nil:
			missing = true
		case storagehelpers.CheckNodeAffinity(vol, ni.Node.Labels) != nil:
			nodeConflict = true
		}
	}
	if nodeConflict {
		reasons = append(reasons, reasonVolumeNodeConfl)
	}
	if _, ok := pv.matchDelayed(ni.Node); !ok {
		reasons = append(reasons, reasonVolumeBindConfl)
	}
	if missing {
		reasons = append(reasons, reasonPVNotExist)
	}
	return reasons
}

// matchDelayed picks a distinct volume on node for each delayed claim
// (claim name → volume); false when one finds none. There is no dynamic
// provisioning to fall back on.
func (pv *podVolumes) matchDelayed(node *v1.Node) (map[string]*v1.PersistentVolume, bool) {
	chosen := map[string]*v1.PersistentVolume{}
	byClaim := map[string]*v1.PersistentVolume{}
	for _, claim := range pv.delayed {
		vol, err := storagehelpers.FindMatchingVolume(claim, pv.candidates, node, chosen, true, true)
		if err != nil || vol == nil {
			return nil, false
		}
		chosen[vol.Name] = vol
		byClaim[claim.Name] = vol
	}
	return byClaim, true
}
